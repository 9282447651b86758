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


/*
 * Run criu with @args (NULL-terminated, after the program name), its output
 * in @log. Return: its exit status, or -1 if it could not run.
 */
static int run_criu(const char *const *args, const char *log)
{
	const char *criu = getenv("IBCKPT_CRIU") ? getenv("IBCKPT_CRIU") : "criu";
	const char *argv[32];
	int i, st, fd;
	pid_t pid;

	argv[0] = criu;
	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
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
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
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
		if (strstr(line, "Error (") || strstr(line, "Error:"))
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
int wait_unregistered(const struct rjob *j)
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

/*
 * criu dump of the released job, rooted at @root (criu takes a process and
 * its descendants). Its network lock is nftables': Debian's criu defaults
 * to iptables, which a minimal system lacks.
 */
int criu_dump(const char *dir, unsigned int root)
{
	char images[4096], log[4200], tree[16];
	const char *args[] = { "dump", "-t", tree, "-D", images, "-v4", "--manage-cgroups=ignore",
			       "--tcp-established", "--network-lock", "nftables", NULL };
	int st;

	snprintf(tree, sizeof(tree), "%u", root);
	snprintf(images, sizeof(images), "%s/" CRIU_DIR, dir);
	snprintf(log, sizeof(log), "%s/dump.log", dir);
	if (dir_make(images))
		return -1;
	ckpt_timing("unregister");
	st = run_criu(args, log);
	ckpt_timing("dump");
	if (st) {
		fprintf(stderr, "ibckpt: criu dump failed (exit %d): see %s\n", st, log);
		criu_errors(log);
		return -1;
	}
	return 0;
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
	char images[4096], log[4200], pidfile[4200], *abs;
	const char *args[] = { "restore", "-d", "-D", images, "-v4", "--pidfile", pidfile,
			       "--manage-cgroups=ignore", "--tcp-established", "--network-lock",
			       "nftables", NULL };
	int st, pid = 0;
	FILE *f;

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
	st = run_criu(args, log);
	ckpt_timing("restore");
	if (st) {
		fprintf(stderr, "ibckpt: criu restore failed (exit %d): see %s\n", st, log);
		criu_errors(log);
		return -1;
	}
	f = fopen(pidfile, "re");
	if (f) {
		if (fscanf(f, "%d", &pid) == 1 && pid > 0)
			*root = pid;
		fclose(f);
	}
	return 0;
}
