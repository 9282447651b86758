// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * regtest: exercise /dev/ibckpt registration as the provider's control
 * thread does, and its refusals.
 *
 *   regtest hold SECONDS       register, print "registered TGID", sleep
 *   regtest errors             check the refusals; exit 0 if all as expected
 *   regtest cycles N           open/register/close N times
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <linux/ibckpt.h>

static int reg(int fd, unsigned int abi, unsigned int flags)
{
	struct ibckpt_register r = { .abi_version = abi, .flags = flags };

	return ioctl(fd, IBCKPT_IOC_REGISTER, &r) ? -errno : 0;
}

static int expect(const char *what, int got, int want)
{
	if (got == want)
		return 0;
	fprintf(stderr, "regtest: %s: got %d (%s), expected %d\n", what, got,
		strerror(-got), want);
	return 1;
}

static int errors(void)
{
	struct ibckpt_event e;
	int fd, bad = 0, st;
	pid_t pid;

	fd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return perror("open /dev/ibckpt"), 1;
	bad |= expect("read before register", read(fd, &e, sizeof(e)) < 0 ? -errno : 0,
		      -ENOTCONN);
	bad |= expect("wrong ABI", reg(fd, IBCKPT_ABI_VERSION + 1, 0), -EPROTO);
	bad |= expect("unknown flags", reg(fd, IBCKPT_ABI_VERSION, 1), -EINVAL);
	bad |= expect("bad ioctl", ioctl(fd, _IO(IBCKPT_IOC_MAGIC, 0x7f)) ? -errno : 0, -ENOTTY);
	pid = fork();
	if (pid == 0)	/* the fd belongs to the parent */
		_exit(reg(fd, IBCKPT_ABI_VERSION, 0) == -EPERM ? 0 : 1);
	waitpid(pid, &st, 0);
	bad |= expect("register from a forked child", WEXITSTATUS(st) ? -1 : 0, 0);
	bad |= expect("register", reg(fd, IBCKPT_ABI_VERSION, 0), 0);
	bad |= expect("register twice", reg(fd, IBCKPT_ABI_VERSION, 0), -EBUSY);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	bad |= expect("read with no event", read(fd, &e, sizeof(e)) < 0 ? -errno : 0, -EAGAIN);
	bad |= expect("short read", read(fd, &e, 4) < 0 ? -errno : 0, -EINVAL);
	close(fd);
	return bad;
}

int main(int argc, char **argv)
{
	int fd, i, n;

	if (argc == 3 && !strcmp(argv[1], "hold")) {
		fd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
		if (fd < 0 || reg(fd, IBCKPT_ABI_VERSION, 0))
			return perror("register"), 1;
		printf("registered %d\n", (int)getpid());
		fflush(stdout);
		sleep((unsigned int)atoi(argv[2]));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "errors"))
		return errors();
	if (argc == 3 && !strcmp(argv[1], "cycles")) {
		n = atoi(argv[2]);
		for (i = 0; i < n; i++) {
			fd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
			if (fd < 0 || reg(fd, IBCKPT_ABI_VERSION, 0))
				return perror("register"), 1;
			close(fd);
		}
		return 0;
	}
	fprintf(stderr, "usage: regtest hold SECONDS | errors | cycles N\n");
	return 2;
}
