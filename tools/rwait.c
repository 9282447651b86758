// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * restart --wait: this ibckpt stays the restored job's parent until it ends,
 * and exits with its status, as the job's own launcher would have. Under
 * Slurm this makes the restart's step the job's: the step lasts as long as
 * the job, its signals reach it, its exit status is the job's.
 *
 * criu restores detached (-d): its root's parent, criu, exits once the job
 * runs, and the root goes to the nearest "child subreaper" above, this
 * command (PR_SET_CHILD_SUBREAPER, set before criu runs). Processes of the
 * job orphaned later come here too and are reaped; once every root has
 * ended the command returns, as a launcher whose task ended does (what the
 * job left behind is its launcher's to end: Slurm ends the step's).
 *
 * Its name becomes RWAIT_COMM, which tells a later checkpoint of the job's
 * cgroup that it is not the job's (cgtree.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "restart.h"

/* the roots not reaped yet (0 once reaped: its pid may be reused) */
static volatile pid_t roots[COORD_MAX_PARTS];
static unsigned int nroots;

static void forward(int sig)
{
	unsigned int i;
	int e = errno;

	for (i = 0; i < nroots; i++)
		if (roots[i] > 0)
			kill(roots[i], sig);
	errno = e;
}

/* Before criu restores: the restored roots become this process's children. */
int rwait_prepare(void)
{
	/* an inherited SIG_IGN would have the kernel reap them, unseen */
	signal(SIGCHLD, SIG_DFL);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) ||
	    prctl(PR_SET_NAME, RWAIT_COMM, 0, 0, 0)) {
		fprintf(stderr, "ibckpt: restart --wait: cannot become a subreaper: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

/**
 * rwait() - wait until the restored job ended
 * @root: the restored roots (each part's)
 * @n: how many
 *
 * SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are passed on to the roots
 * (srun passes them to its task, this command).
 * Return: the first root's exit status that is not 0 (128 + the signal
 * that killed it), or 0.
 */
int rwait(const pid_t *root, unsigned int n)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	struct sigaction sa = { .sa_handler = forward };
	unsigned int i, left;
	sigset_t block, old;
	int st, rc = 0, code;
	pid_t pid;

	sigemptyset(&block);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&block, sigs[i]);
	for (i = 0; i < n && i < COORD_MAX_PARTS; i++)
		roots[i] = root[i];
	nroots = i;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	fflush(NULL);
	for (left = nroots; left;) {
		pid = waitpid(-1, &st, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;	/* ECHILD: nothing of the job is ours any more */
		}
		code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		/* no signal forwarded to a root's pid between its reaping and here */
		sigprocmask(SIG_BLOCK, &block, &old);
		for (i = 0; i < nroots; i++) {
			if (roots[i] != pid)
				continue;
			roots[i] = 0;
			left--;
			if (code && !rc)
				rc = code;
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	return rc;
}
