// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Debian's stock criu, run on a released job (Documentation/restart.rst:
 * why it works unmodified) and on its images.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/ibckpt.h>
#include "restart.h"

/* ---- criu (Documentation/restart.rst: why stock criu works on a released job) ---- */


/* What every run of criu takes: restart.rst says why. */
static const char *const criu_common[] = { "-v4", "--manage-cgroups=ignore",
					   "--tcp-established", "--network-lock", "nftables" };

static void criu_errors(const char *log);

/*
 * Run criu @what (dump, restore) with @args (NULL-terminated, after the
 * action) and the common options, its output in @log. A failure is said,
 * with criu's own errors. Return: 0, or -1.
 */
static int run_criu(const char *what, const char *const *args, const char *log)
{
	const char *criu = getenv("IBCKPT_CRIU") ? getenv("IBCKPT_CRIU") : "criu";
	const char *argv[32];
	unsigned int i, n = 0;
	int st, fd;
	pid_t pid;

	argv[n++] = criu;
	argv[n++] = what;
	for (i = 0; args[i] && n < 20; i++)
		argv[n++] = args[i];
	for (i = 0; i < sizeof(criu_common) / sizeof(criu_common[0]); i++)
		argv[n++] = criu_common[i];
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ibckpt: cannot run criu: %s\n", strerror(errno));
		return -1;
	}
	if (!pid) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		execvp(criu, (char *const *)argv);
		fprintf(stderr, "%s: %s\n", criu, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "ibckpt: criu %s: %s\n", what, strerror(errno));
			return -1;
		}
	}
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (!st)
		return 0;
	fprintf(stderr, "ibckpt: criu %s failed (exit %d): see %s\n", what, st, log);
	criu_errors(log);
	return -1;
}

/*
 * Quote criu's own errors from @log (its "Error (" lines, the last
 * CRIU_ERRORS of them): "see the log" alone sends every user digging.
 */
#define CRIU_ERRORS 4
static void criu_errors(const char *log)
{
	char line[512], last[CRIU_ERRORS][512];
	unsigned int n = 0, i;
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "Error (") || strstr(line, "Error:") ||
		    !strncmp(line, "ibckpt: ", 8))	/* our action's (dump_thaw()) */
			snprintf(last[n++ % CRIU_ERRORS], sizeof(last[0]), "%s", line);
	fclose(f);
	for (i = n > CRIU_ERRORS ? n - CRIU_ERRORS : 0; i < n; i++)
		fprintf(stderr, "  criu: %s", last[i % CRIU_ERRORS]);
}

/* Does the process still hold /dev/ibckpt? (a released one drops it at the thaw) */
static bool holds_module(unsigned int pid)
{
	char path[64], link[64];
	struct dirent *d;
	bool held = false;
	ssize_t n;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/fd", pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!held && (d = readdir(dir)) != NULL) {
		char p[320];

		snprintf(p, sizeof(p), "%s/%s", path, d->d_name);
		n = readlink(p, link, sizeof(link) - 1);
		held = n > 0 && (link[n] = 0, !strcmp(link, "/dev/" IBCKPT_DEVICE_NAME));
	}
	closedir(dir);
	return held;
}

/* Wait (up to 5 s) until no process of @j holds /dev/ibckpt: criu could not dump it. */
int wait_unregistered(const struct job_chans *j)
{
	unsigned int i, tries;

	for (tries = 0; tries < 500; tries++) {
		for (i = 0; i < j->n && !holds_module(j->p[i].pid); i++)
			;
		if (i == j->n)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "ibckpt: process %u still holds /dev/%s after its release\n", j->p[i].pid,
		IBCKPT_DEVICE_NAME);
	return -1;
}

/* @root leads no session and has no controlling terminal (criu_dump()). */
static bool shell_job(pid_t root)
{
	char path[64], buf[1024], *p;
	int tty = -1, fd;
	ssize_t n;

	if (getsid(root) == root)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* after the command's closing parenthesis: state, ppid, pgrp, session, tty_nr */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %d", &tty) != 1)
		return false;
	return tty == 0;
}

/* This ibckpt's path (criu executes its action script as a path). Return: 0, or -1 (said). */
static int self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0 || (size_t)n >= len - 1) {
		fprintf(stderr, "ibckpt: /proc/self/exe: %s\n", n < 0 ? strerror(errno) : "too long");
		return -1;
	}
	buf[n] = 0;
	return 0;
}

/* criu's action script learns the job it hands over from our environment */
#define ENV_DUMP_SESSION	"IBCKPT_DUMP_SESSION"
#define ENV_DUMP_DIR		"IBCKPT_DUMP_DIR"

/*
 * criu's pre-dump action, its last step before it seizes the tree. The job
 * stayed frozen from its release until here, so none of its code ran while
 * every verb of it had to wait at a closed gate: a signal handler or a
 * timer's work would have run (perftest -D's alarm()-driven phases went by
 * with nothing to measure, and it reported 0 iterations). criu cannot seize
 * a parked thread: thaw the job now (unless its freeze's --persist ended
 * first), then wait until none of its processes holds /dev/ibckpt (each
 * drops it at the thaw). Non-zero fails criu's dump before it touched the
 * job, which is then reacquired in place. Our messages go to criu's log,
 * where criu_errors() finds them.
 */
static int dump_thaw(const char *session, const char *dir)
{
	struct job_chans j = { 0 };
	unsigned long long id;
	char *end;
	int rc;

	errno = 0;
	id = strtoull(session, &end, 10);
	if (errno || !id || end == session || *end) {
		fprintf(stderr, "ibckpt: criu's action: bad session '%s'\n", session);
		return 1;
	}
	if (thaw_session_left(id, true))	/* into criu's log, as text */
		return 1;
	rc = job_load(dir, &j) || wait_unregistered(&j);
	job_chans_free(&j);
	return rc ? 1 : 0;
}

/*
 * ibckpt as criu's action script: criu runs it with no argument and our
 * environment (criu_dump()) at each of its actions. pre-dump: the job's
 * thaw (above); post-dump: a job on several nodes' barrier (nodes.c); every
 * other action: 0.
 */
int cmd_criu_action(void)
{
	const char *act = getenv("CRTOOLS_SCRIPT_ACTION");
	const char *session = getenv(ENV_DUMP_SESSION), *dir = getenv(ENV_DUMP_DIR);

	if (!act || !session || !dir) {
		fprintf(stderr, "ibckpt: run as criu's action script, but not by ibckpt's criu "
			"dump\n");
		return 1;
	}
	if (!strcmp(act, "pre-dump"))
		return dump_thaw(session, dir);
	if (!strcmp(act, "post-dump"))
		return nodes_post_dump();
	return 0;
}

/*
 * criu dump of the released job, frozen as session @session, rooted at
 * @root (criu takes a process and its descendants). Its network lock is
 * nftables': Debian's criu defaults to iptables, which a minimal system
 * lacks. criu's action script is this ibckpt, which thaws the job just
 * before criu seizes it (dump_thaw()) and, a job on several nodes, holds
 * the post-dump barrier whose whereabouts nodes_post_dump_env() put in our
 * environment.
 *
 * A root that leads no session and has no terminal (a Slurm task:
 * slurmstepd makes it a group leader only) takes criu's --shell-job, in the
 * dump and in the restore, which puts the restored root in the restorer's
 * session: SHELL_JOB_FILE says so to the restart. One with a terminal (a
 * job started from a shell) is left to criu's refusal: a restore could not
 * give it its terminal back.
 */
int criu_dump(const char *dir, unsigned int root, uint64_t session)
{
	char images[4096], log[4200], tree[16], marker[4200], self[4096], num[32], *abs;
	const char *args[] = { "-t", tree, "-D", images, "--action-script", NULL, NULL, NULL };
	unsigned int n = 6;
	int st;

	snprintf(tree, sizeof(tree), "%u", root);
	snprintf(images, sizeof(images), "%s/" CRIU_DIR, dir);
	snprintf(log, sizeof(log), "%s/dump.log", dir);
	if (dir_make(images))
		return -1;
	snprintf(marker, sizeof(marker), "%s/" SHELL_JOB_FILE, dir);
	if (shell_job((pid_t)root)) {
		if (write_file(dir, SHELL_JOB_FILE, "", 0))
			return -1;
		args[n++] = "--shell-job";
	} else if (unlink(marker) && errno != ENOENT) {
		fprintf(stderr, "ibckpt: %s: %s\n", marker, strerror(errno));
		return -1;
	}
	if (self_exe(self, sizeof(self)))
		return -1;
	args[5] = self;
	/* absolute: criu runs its actions in a directory of its own */
	abs = realpath(dir, NULL);
	if (!abs) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)session);
	st = setenv(ENV_DUMP_SESSION, num, 1) || setenv(ENV_DUMP_DIR, abs, 1) ? -1 : 0;
	free(abs);
	if (st) {
		fprintf(stderr, "ibckpt: setenv: %s\n", strerror(errno));
	} else {
		ckpt_timing("save");
		st = run_criu("dump", args, log);
		ckpt_timing("dump");
	}
	unsetenv(ENV_DUMP_SESSION);
	unsetenv(ENV_DUMP_DIR);
	return st;
}

/*
 * criu restore of the job; *@root is set to the restored root's pid, which
 * criu writes to DIR/restore.pid (0 if it cannot be read): a restart whose
 * reacquire fails kills the tree it restored. The pid file's path is made
 * absolute (criu takes a relative one in its work directory, the images),
 * and an earlier restart's goes first (criu creates it with O_EXCL).
 */
int criu_restore(const char *dir, pid_t *root)
{
	char images[4096], log[4200], pidfile[4200], marker[4200], *abs;
	const char *args[] = { "-d", "-D", images, "--pidfile", pidfile, NULL, NULL };
	int st, pid = 0;
	FILE *f;

	snprintf(marker, sizeof(marker), "%s/" SHELL_JOB_FILE, dir);
	if (!access(marker, F_OK))
		args[5] = "--shell-job";	/* as the dump (criu_dump()) */

	*root = 0;
	abs = realpath(dir, NULL);
	if (!abs) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(pidfile, sizeof(pidfile), "%s/" PID_FILE, abs);
	free(abs);
	if (unlink(pidfile) && errno != ENOENT) {
		fprintf(stderr, "ibckpt: %s: %s\n", pidfile, strerror(errno));
		return -1;
	}
	snprintf(images, sizeof(images), "%s/" CRIU_DIR, dir);
	snprintf(log, sizeof(log), "%s/restore.log", dir);
	ckpt_timing(NULL);
	st = run_criu("restore", args, log);
	ckpt_timing("restore");
	if (st)
		return -1;
	f = fopen(pidfile, "re");
	if (f) {
		if (fscanf(f, "%d", &pid) == 1 && pid > 0)
			*root = pid;
		fclose(f);
	}
	return 0;
}
