// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The process tree of a job: at a checkpoint its pids are written down
 * (every one must be free for criu to restore it); after a restart whose
 * reacquire failed, the restored tree is stopped, walked and killed, and
 * waited for until its pids are free again (Documentation/restart.rst).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "restart.h"

/* ---- a restart whose reacquire failed: the restored job goes ---- */

#define KILL_WAIT_MS	10000	/* until the killed job's pids are free again */
#define STOP_WAIT_MS	100	/* per process, until its threads are stopped */

struct pids {
	pid_t *v;
	unsigned int n;
};

/* @pid into @s, once. Return: 0, or -1 (out of memory). */
static int pids_add(struct pids *s, pid_t pid)
{
	unsigned int i;
	pid_t *v;

	for (i = 0; i < s->n; i++)
		if (s->v[i] == pid)
			return 0;
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		return -1;
	s->v = v;
	s->v[s->n++] = pid;
	return 0;
}

/* A zombie holds its pid until its parent (or init) reaps it: it exists. */
static bool pid_exists(pid_t pid)
{
	return !kill(pid, 0) || errno == EPERM;
}

#define PF_EXITING_FLAG	0x4	/* include/linux/sched.h: getting shut down */
#define DYING_WAIT_MS	5000	/* how long a restart waits for a dying process's pid */

/* @pid is exiting or a zombie: its pid is free soon, if its parent reaps it. */
static bool pid_dying(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags;
	char state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;	/* gone since */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	/* after the command's closing parenthesis: state, ppid, pgrp, session, tty, tpgid, flags */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return false;
	return state == 'Z' || state == 'X' || (flags & PF_EXITING_FLAG);
}

/**
 * pid_taken() - is @pid in use, and will stay so?
 * @pid: a pid a restart needs free
 *
 * A checkpoint's criu kills the job as it exits: a restart right after may
 * find its processes still exiting, or zombies not yet reaped. Such a pid
 * is waited for, DYING_WAIT_MS at most. Return: true if it is taken.
 */
bool pid_taken(pid_t pid)
{
	unsigned int waited = 0;

	while (pid_exists(pid) && pid_dying(pid) && waited < DYING_WAIT_MS) {
		usleep(20000);
		waited += 20;
	}
	return pid_exists(pid);
}

/*
 * Each thread of @pid's state letter (/proc/PID/task/TID/stat), in @states
 * (at most @len - 1 of them). Return: false if @pid is gone.
 */
static bool thread_states(pid_t pid, char *states, size_t len)
{
	char path[80], buf[512], *p;
	struct dirent *d;
	size_t n = 0;
	DIR *tasks;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	tasks = opendir(path);
	if (!tasks)
		return false;
	while ((d = readdir(tasks)) != NULL && n + 1 < len) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", pid, d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		/* the command name may hold anything: the state follows its last ')' */
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		if (p && p[1] == ' ')
			states[n++] = p[2];
		fclose(f);
	}
	closedir(tasks);
	states[n] = 0;
	return true;
}

/*
 * @pid's children into @s, once every thread of it is stopped (or a moment
 * has passed): a thread in the middle of a fork when SIGSTOP came finishes
 * it, and its child must not appear behind the walk. The kernel lists
 * children per thread (the one that forked). Return: 0, or -1 (no memory).
 */
static int pids_children(struct pids *s, pid_t pid, bool stopped)
{
	char path[80], states[256];
	unsigned int waited;
	struct dirent *d;
	DIR *tasks;
	FILE *f;
	int child, rc = 0;

	for (waited = 0; stopped && waited < STOP_WAIT_MS; waited++) {
		if (!thread_states(pid, states, sizeof(states)))
			return 0;
		if (!states[strspn(states, "tTZX")])
			break;
		usleep(1000);
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	tasks = opendir(path);
	if (!tasks)
		return 0;
	while (!rc && (d = readdir(tasks)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", pid, d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (!rc && fscanf(f, "%d", &child) == 1)
			rc = pids_add(s, child);
		fclose(f);
	}
	closedir(tasks);
	return rc;
}

/* @fd's socket option @opt (SOL_SOCKET), or -1. */
static int sock_int(int fd, int opt)
{
	socklen_t len = sizeof(int);
	int v;

	return getsockopt(fd, SOL_SOCKET, opt, &v, &len) ? -1 : v;
}

/*
 * Is @fd (ours) a TCP socket a close would end in the open, with a FIN and
 * a TIME_WAIT, or a RST? A listening one leaves no TIME_WAIT (it resets
 * what waits in its accept queue), and repair mode is refused for it.
 */
static bool tcp_connection(int fd)
{
	int domain = sock_int(fd, SO_DOMAIN);

	return sock_int(fd, SO_TYPE) == SOCK_STREAM && (domain == AF_INET || domain == AF_INET6) &&
	       sock_int(fd, SO_PROTOCOL) == IPPROTO_TCP && sock_int(fd, SO_ACCEPTCONN) == 0;
}

/*
 * Put each TCP connection in stopped @pid's descriptor table into repair
 * mode, as criu's dump does before it kills a job (CAP_NET_ADMIN): the
 * SIGKILL's close then ends it in silence (no FIN, no RST, no TIME_WAIT).
 * A connection in TIME_WAIT holds its address pair, and criu cannot
 * restore an established one over it ("Can't connect inet socket back"):
 * the directory restarts again at once, and a peer outside the job sees
 * nothing, as after the checkpoint. One that cannot be is closed as usual
 * (said). A socket the job handed to a process outside it (SCM_RIGHTS)
 * would stay in repair mode there: criu restores none such.
 */
static void tcp_quiet(pid_t pid)
{
	char path[80], link[64];
	struct dirent *d;
	int pfd, fd, on = 1;
	ssize_t len;
	DIR *fds;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	fds = opendir(path);
	if (!fds)
		return;
	pfd = pidfd_open(pid, 0);
	if (pfd < 0 && errno != ESRCH)
		fprintf(stderr, "ibckpt: process %d: cannot take its TCP connections (%s): "
			"they may linger in TIME_WAIT\n", pid, strerror(errno));
	while (pfd >= 0 && (d = readdir(fds)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%.16s", pid, d->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (strncmp(link, "socket:", 7))
			continue;
		fd = pidfd_getfd(pfd, atoi(d->d_name), 0);
		if (fd < 0) {
			if (errno != ESRCH && errno != EBADF)
				fprintf(stderr, "ibckpt: process %d: fd %s: cannot take it (%s): "
					"a TCP connection may linger in TIME_WAIT\n", pid,
					d->d_name, strerror(errno));
			continue;
		}
		if (tcp_connection(fd) && setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)))
			fprintf(stderr, "ibckpt: process %d: fd %s: cannot close its TCP "
				"connection quietly (%s): it may linger in TIME_WAIT\n",
				pid, d->d_name, strerror(errno));
		close(fd);
	}
	if (pfd >= 0)
		close(pfd);
	closedir(fds);
}

/*
 * Kill what criu restored: @root (0: not known) and the job's processes of
 * @j (absent before the restore: criu's), with every descendant, then wait
 * until each pid is free again. Every process is stopped before its
 * children are read and none is killed before all are stopped: a parent
 * killed first hands its children to init, out of the walk's reach, and a
 * shell of the job never runs again to react (to write an exit status).
 * The job's TCP connections end quietly (tcp_quiet()).
 * Return: the number of processes killed, or -1 if one may be left (said).
 */
int kill_restored(pid_t root, const struct job_chans *j)
{
	unsigned int i, tries, left = 0, killed = 0;
	struct pids s = { 0 };
	char states[64];
	int rc = 0;

	if (!root)
		fprintf(stderr, "ibckpt: criu wrote no %s: the job's processes with a provider "
			"and their descendants are killed, the restored root may be left\n",
			PID_FILE);
	if (root && pids_add(&s, root))
		rc = -1;
	for (i = 0; !rc && i < j->n; i++)
		rc = pids_add(&s, (pid_t)j->p[i].pid);
	/* s grows behind i: every child found is stopped and walked in turn */
	for (i = 0; !rc && i < s.n; i++) {
		if (kill(s.v[i], SIGSTOP))
			continue;	/* gone; any other failure is the SIGKILL's to tell */
		rc = pids_children(&s, s.v[i], true);
	}
	if (rc)
		fprintf(stderr, "ibckpt: out of memory: some of the restored job may be left\n");
	/* all stopped (unless out of memory): none closes a connection before it is quiet */
	for (i = 0; i < s.n; i++)
		tcp_quiet(s.v[i]);
	for (i = 0; i < s.n; i++) {
		if (!kill(s.v[i], SIGKILL))
			killed++;
		else if (errno != ESRCH) {
			fprintf(stderr, "ibckpt: cannot kill process %d: %s\n", s.v[i],
				strerror(errno));
			rc = -1;
		}
	}
	for (tries = 0; tries < KILL_WAIT_MS / 10; tries++) {
		/* a restart --wait is the restored root's parent (rwait.c): reap it */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		for (left = 0, i = 0; i < s.n; i++)
			left += pid_exists(s.v[i]);
		if (!left)
			break;
		usleep(10000);
	}
	for (i = 0; left && i < s.n; i++) {
		if (!pid_exists(s.v[i]))
			continue;
		if (!thread_states(s.v[i], states, sizeof(states)))
			states[0] = 0;
		fprintf(stderr, "ibckpt: process %d is still there %d s after SIGKILL (its "
			"threads' states: %s)\n", s.v[i], KILL_WAIT_MS / 1000,
			states[0] ? states : "?");
		rc = -1;
	}
	free(s.v);
	return rc ? -1 : (int)killed;
}

/**
 * tree_save() - write the pids of @root's tree into DIR/PIDS_FILE
 * @dir: the checkpoint directory
 * @root: the process criu dumps with its descendants
 *
 * A restart checks them all before criu runs: criu restores the same pids,
 * and a taken one (the job still running, a leftover zombie) makes it fail
 * with less to say. Return: 0 or -1 (said).
 */
int tree_save(const char *dir, pid_t root)
{
	struct pids s = { 0 };
	char *buf = NULL, *p;
	unsigned int i;
	int rc = pids_add(&s, root);

	for (i = 0; !rc && i < s.n; i++)	/* s grows behind i */
		rc = pids_children(&s, s.v[i], false);
	buf = rc ? NULL : malloc((size_t)s.n * 12 + 1);
	if (!buf) {
		fprintf(stderr, "ibckpt: out of memory\n");
		free(s.v);
		return -1;
	}
	for (p = buf, i = 0; i < s.n; i++)
		p += sprintf(p, "%d\n", s.v[i]);
	rc = write_file(dir, PIDS_FILE, buf, (size_t)(p - buf));
	free(buf);
	free(s.v);
	return rc;
}

/**
 * tree_taken() - is a pid of the checkpointed tree in use?
 * @dir: the checkpoint directory (without PIDS_FILE: nothing to check)
 *
 * Return: 0, or -1 after saying which pid is taken.
 */
int tree_taken(const char *dir)
{
	char path[4200];
	int pid, rc = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" PIDS_FILE, dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!rc && fscanf(f, "%d", &pid) == 1) {
		if (pid > 0 && pid_taken(pid)) {
			fprintf(stderr, "ibckpt: process %d exists: the job still runs, or its pid "
				"is taken (criu restores the same pids)\n", pid);
			rc = -1;
		}
	}
	fclose(f);
	return rc;
}
