// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/ibckpt: the control channel of the stacking provider.
 *
 * Each process that uses the provider opens the device (O_CLOEXEC) and
 * registers one control thread with IBCKPT_IOC_REGISTER. The file is owned by
 * the process that opened it: an fd inherited across fork() cannot register
 * for the child. The control thread reads struct ibckpt_event records; the
 * registration ends when the file is released, which also happens when the
 * process exits.
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "creds.h"
#include "ibckpt.h"
#include "registry.h"

/**
 * struct ibckpt_file - one open /dev/ibckpt
 * @lock: serialises ioctls on this file against each other
 * @owner: thread group that opened the file
 * @proc: the registration, NULL until IBCKPT_IOC_REGISTER; set once under
 *	@lock, read without it by read()/poll() (READ_ONCE) and cleared only in
 *	release, when no other file operation can run
 */
struct ibckpt_file {
	struct mutex lock;	/* serialises this file's ioctls */
	struct pid *owner;
	struct ibckpt_proc *proc;
};

static int ibckpt_open(struct inode *inode, struct file *file)
{
	struct ibckpt_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	f->owner = get_task_pid(current, PIDTYPE_TGID);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int ibckpt_release(struct inode *inode, struct file *file)
{
	struct ibckpt_file *f = file->private_data;
	struct ibckpt_proc *p = f->proc;

	if (p) {
		/* off the list first: no new freeze asks it */
		ibckpt_quiesce_unlist(p);
		/* a freeze waiting for its answer goes on without it */
		ibckpt_quiesce_answer(p, NULL);
		ibckpt_proc_put(p);
	}
	put_pid(f->owner);
	kfree(f);
	return 0;
}

static long ibckpt_register(struct ibckpt_file *f, void __user *arg)
{
	struct ibckpt_register reg;
	struct ibckpt_proc *p;

	if (copy_from_user(&reg, arg, sizeof(reg)))
		return -EFAULT;
	if (reg.abi_version != IBCKPT_ABI_VERSION)
		return -EPROTO;
	if (reg.flags)
		return -EINVAL;
	/* an fd inherited across fork() belongs to the parent */
	if (task_tgid(current) != f->owner)
		return -EPERM;
	if (f->proc)
		return -EBUSY;

	p = ibckpt_proc_add(f->owner);
	if (IS_ERR(p))
		return PTR_ERR(p);
	WRITE_ONCE(f->proc, p);
	return 0;
}

static long ibckpt_quiesced(struct ibckpt_file *f, void __user *arg)
{
	struct ibckpt_quiesced q;

	if (!f->proc)
		return -ENOTCONN;
	/* only the control thread speaks for the process */
	if (task_pid(current) != f->proc->ctrl)
		return -EPERM;
	if (copy_from_user(&q, arg, sizeof(q)))
		return -EFAULT;
	if (q.status > MAX_ERRNO)
		return -EINVAL;
	return ibckpt_quiesce_answer(f->proc, &q);
}

static long ibckpt_snapshot(struct ibckpt_file *f, void __user *arg)
{
	struct ibckpt_snapshot_arg a;

	if (!f->proc)
		return -ENOTCONN;
	if (task_pid(current) != f->proc->ctrl)
		return -EPERM;
	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	return ibckpt_snapshot_take(f->proc, &a);
}

/* After a restore: the threads share the control thread's creds (creds.c). */
static long ibckpt_share_creds(struct ibckpt_file *f, void __user *arg)
{
	struct ibckpt_share_creds res;
	int ret;

	if (!f->proc)
		return -ENOTCONN;
	if (task_pid(current) != f->proc->ctrl)
		return -EPERM;
	ret = ibckpt_creds_share(&res);
	if (ret)
		return ret;
	/* the counts are optional: the provider may pass NULL */
	if (arg && copy_to_user(arg, &res, sizeof(res)))
		return -EFAULT;
	return 0;
}

static long ibckpt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct ibckpt_file *f = file->private_data;
	long ret;

	mutex_lock(&f->lock);
	switch (cmd) {
	case IBCKPT_IOC_REGISTER:
		ret = ibckpt_register(f, (void __user *)arg);
		break;
	case IBCKPT_IOC_QUIESCED:
		ret = ibckpt_quiesced(f, (void __user *)arg);
		break;
	case IBCKPT_IOC_SNAPSHOT:
		ret = ibckpt_snapshot(f, (void __user *)arg);
		break;
	case IBCKPT_IOC_SHARE_CREDS:
		ret = ibckpt_share_creds(f, (void __user *)arg);
		break;
	default:
		ret = -ENOTTY;
		break;
	}
	mutex_unlock(&f->lock);
	return ret;
}

static ssize_t ibckpt_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct ibckpt_file *f = file->private_data;
	struct ibckpt_proc *p = READ_ONCE(f->proc);
	struct ibckpt_event e;
	int ret;

	if (!p)
		return -ENOTCONN;
	if (count < sizeof(e))
		return -EINVAL;
	while (!ibckpt_evq_pop(&p->events, &e)) {
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(p->events.wq, ibckpt_evq_pending(&p->events));
		if (ret)
			return ret;
	}
	if (copy_to_user(buf, &e, sizeof(e)))
		return -EFAULT;
	return sizeof(e);
}

static __poll_t ibckpt_poll(struct file *file, struct poll_table_struct *wait)
{
	struct ibckpt_file *f = file->private_data;
	struct ibckpt_proc *p = READ_ONCE(f->proc);

	if (!p)
		return EPOLLERR;
	poll_wait(file, &p->events.wq, wait);
	return ibckpt_evq_pending(&p->events) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations ibckpt_fops = {
	.owner = THIS_MODULE,
	.open = ibckpt_open,
	.release = ibckpt_release,
	.read = ibckpt_read,
	.poll = ibckpt_poll,
	.unlocked_ioctl = ibckpt_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

static struct miscdevice ibckpt_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = IBCKPT_DEVICE_NAME,
	.fops = &ibckpt_fops,
	/* any process may use RDMA and so register; freezing needs privilege */
	.mode = 0666,
};

/**
 * ibckpt_chardev_init() - create /dev/ibckpt
 *
 * Return: 0 or a negative errno from misc_register().
 */
int ibckpt_chardev_init(void)
{
	return misc_register(&ibckpt_misc);
}

/**
 * ibckpt_chardev_exit() - remove /dev/ibckpt
 *
 * Open files keep the module pinned (fops owner), so none exists here.
 */
void ibckpt_chardev_exit(void)
{
	misc_deregister(&ibckpt_misc);
}
