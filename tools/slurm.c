// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A Slurm job step as a job (--slurm JOBID.STEP), and the fan-out through
 * Slurm (Documentation/restart.rst, "A Slurm job step").
 *
 * On a node, a step's tasks are in its cgroup
 * .../<node>_slurmstepd.scope/job_J/step_S/user (cgroup v2, Slurm 22.05; the
 * scope is "slurmstepd.scope" without multiple-slurmd), the step's
 * slurmstepd in step_S/slurm: the job is the user cgroup, found on the node
 * the command runs on. Given without --node, freeze, thaw and checkpoint run
 * on every node of the step instead: this command becomes
 *
 *	srun --no-allocate -N N --ntasks-per-node=1 -w NODES ibckpt ... --run ID
 *
 * (as root; a user's srun takes --jobid=J --overlap instead: a step of the
 * same job, a sibling cgroup, never frozen with the target), whose task on
 * each node is this command again, its rank there from SLURM_NODEID. The
 * agents know they are by IBCKPT_SLURM_AGENT=J.S. A restart (--slurm JOBID)
 * runs the same way as a new step of job J (srun --jobid=J), which holds the
 * restored job until it ends (restart --wait).
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "restart.h"

#define AGENT_ENV	"IBCKPT_SLURM_AGENT"
#define CGROUP_ROOT	"/sys/fs/cgroup"

/* Run @argv; its standard output into @out (NUL-terminated). Return: its exit status, or -1. */
static int capture(char *const argv[], char *out, size_t len)
{
	size_t got = 0;
	int fds[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (!pid) {
		dup2(fds[1], 1);
		execvp(argv[0], argv);
		fprintf(stderr, "ibckpt: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		char drain[512];
		bool full = got + 1 >= len;

		/* past @len, read on to the end: a writer cut short dies of SIGPIPE */
		n = full ? read(fds[0], drain, sizeof(drain)) :
			   read(fds[0], out + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (!full)
			got += (size_t)n;
	}
	out[got] = 0;
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The value of "KEY=value" in scontrol's one-line record @rec, into @out. */
static int field(const char *rec, const char *key, char *out, size_t len)
{
	size_t k = strlen(key), n;
	const char *p = rec;

	while ((p = strstr(p, key))) {
		if ((p == rec || p[-1] == ' ') && p[k] == '=') {
			p += k + 1;
			n = strcspn(p, " \n");
			if (n >= len)
				return -1;
			memcpy(out, p, n);
			out[n] = 0;
			return 0;
		}
		p += k;
	}
	return -1;
}

/*
 * Job @job is running (and not suspended): @what says what was to be done.
 * *@owner (if set): the job's user id, from "UserId=NAME(UID)".
 * Return: 0, or -1 (said).
 */
static int job_running(unsigned int job, const char *what, long *owner)
{
	char id[16], rec[8192], state[64], user[128], *p;
	char *argv[] = { "scontrol", "show", "job", "-o", id, NULL };

	snprintf(id, sizeof(id), "%u", job);
	if (capture(argv, rec, sizeof(rec)) || field(rec, "JobState", state, sizeof(state))) {
		fprintf(stderr, "ibckpt: %s: no Slurm job %u (scontrol show job %u)\n", what, job,
			job);
		return -1;
	}
	if (!strcmp(state, "SUSPENDED")) {
		fprintf(stderr, "ibckpt: %s: Slurm job %u is suspended (scontrol suspend): its "
			"processes cannot quiesce; resume it first (scontrol resume %u)\n", what,
			job, job);
		return -1;
	}
	if (strcmp(state, "RUNNING")) {
		fprintf(stderr, "ibckpt: %s: Slurm job %u is %s, not running\n", what, job,
			state);
		return -1;
	}
	if (owner) {
		p = field(rec, "UserId", user, sizeof(user)) ? NULL : strrchr(user, '(');
		if (!p || sscanf(p, "(%ld)", owner) != 1) {
			fprintf(stderr, "ibckpt: %s: Slurm job %u: no owner in scontrol's "
				"record\n", what, job);
			return -1;
		}
	}
	return 0;
}

/*
 * This node's cgroup of step @j->slurm into @buf (@j->cgroup points there).
 * @frozen_ok: a step Slurm suspended (its cgroup frozen) is taken (thaw,
 * status, dump), else refused. Return: 0, or -1 (said).
 */
static int step_cgroup(struct cli_job *j, bool frozen_ok, char *buf, size_t len)
{
	char pat[256], ev[4200];
	glob_t g;
	FILE *f;
	int rc;

	snprintf(pat, sizeof(pat), CGROUP_ROOT "/system.slice/*slurmstepd.scope/job_%u/step_%u/user",
		 j->slurm_job, j->slurm_step);
	rc = glob(pat, GLOB_NOSORT, NULL, &g);
	if (rc || g.gl_pathc != 1) {
		fprintf(stderr, "ibckpt: Slurm step %s has no processes on this node (%s: %s)\n",
			j->slurm, pat, rc ? "none" : "more than one");
		if (!rc)
			globfree(&g);
		return -1;
	}
	snprintf(buf, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	j->cgroup = buf;
	if (frozen_ok)
		return 0;
	/* Slurm suspends a step by freezing this cgroup (cgroup.freeze) */
	snprintf(ev, sizeof(ev), "%.4096s/cgroup.events", buf);
	f = fopen(ev, "re");
	rc = 0;
	while (f && fgets(ev, sizeof(ev), f))
		if (!strcmp(ev, "frozen 1\n"))
			rc = -1;
	if (f)
		fclose(f);
	if (rc)
		fprintf(stderr, "ibckpt: Slurm step %s is suspended on this node (its cgroup is "
			"frozen: scontrol suspend): its processes cannot quiesce; resume it first "
			"(scontrol resume %u)\n", j->slurm, j->slurm_job);
	return rc;
}

/*
 * Slurm's variables that srun takes as options (SLURM_*, and SRUN_* that
 * sbatch and salloc set for the steps of a job): the fan-out's are its own.
 */
static void slurm_env_clear(void)
{
	extern char **environ;
	char name[256], **e;
	size_t n;

again:
	for (e = environ; *e; e++) {
		if ((strncmp(*e, "SLURM_", 6) && strncmp(*e, "SRUN_", 5)) ||
		    !strncmp(*e, "SLURM_CONF=", 11))
			continue;
		n = strcspn(*e, "=");
		if (n >= sizeof(name))
			continue;
		memcpy(name, *e, n);
		name[n] = 0;
		unsetenv(name);
		goto again;	/* environ changed under us */
	}
}

/*
 * Run this command again on @nodes nodes of job @job (@list, or any), one
 * task each: as a step of that job (@in_job, or not root), else as root
 * outside any job (srun -Z: slurmctld lets no one but the job's owner
 * create a step in it, root included); @marker goes to the agents in
 * IBCKPT_SLURM_AGENT; @meet: the agents meet in a directory (--node), the
 * operation named here, once for all of them. Return: -1 (said) if srun
 * cannot be run.
 */
static int fanout(unsigned int job, unsigned int nodes, const char *list, const char *marker,
		  bool in_job, bool meet, int argc, char **argv)
{
	char jobid[32], n[32], self[4096], run[128], host[256] = "", *av[64];
	struct timespec ts;
	int i, k = 0;
	ssize_t len;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0 || argc + 16 > (int)(sizeof(av) / sizeof(av[0]))) {
		fprintf(stderr, "ibckpt: cannot fan out through srun: %s\n",
			len <= 0 ? strerror(errno) : "too many arguments");
		return -1;
	}
	self[len] = 0;
	snprintf(jobid, sizeof(jobid), "--jobid=%u", job);
	snprintf(n, sizeof(n), "--nodes=%u", nodes);
	av[k++] = "srun";
	if (in_job || getuid()) {
		av[k++] = jobid;
		av[k++] = "--overlap";	/* beside the step, on its resources */
	} else {
		av[k++] = "--no-allocate";
	}
	av[k++] = n;
	av[k++] = "--ntasks-per-node=1";
	av[k++] = "--kill-on-bad-exit=0";	/* a failing node says why, the others too */
	av[k++] = "--quiet";
	if (list)
		av[k++] = (char *)list;
	av[k++] = "--";
	av[k++] = self;
	if (json)
		av[k++] = "-j";
	for (i = 0; i < argc; i++)
		av[k++] = argv[i];
	if (meet) {
		/*
		 * New for each operation, the same on every node; at most 64
		 * characters (coord_run_id()): the host's first label, cut.
		 */
		clock_gettime(CLOCK_REALTIME, &ts);
		gethostname(host, sizeof(host) - 1);
		host[strcspn(host, ".")] = 0;
		snprintf(run, sizeof(run), "slurm-%s-%.12s-%d-%lld", marker, host, (int)getpid(),
			 (long long)ts.tv_sec);
		av[k++] = "--run";
		av[k++] = run;
	}
	av[k] = NULL;
	slurm_env_clear();
	if (setenv(AGENT_ENV, marker, 1))
		return -1;
	fflush(NULL);
	execvp("srun", av);
	fprintf(stderr, "ibckpt: cannot run srun: %s\n", strerror(errno));
	return -1;
}

/* In an agent: this node's rank among @o's nodes, from Slurm. */
static int agent_rank(struct coord_opts *o, const char *dir)
{
	const char *id = getenv("SLURM_NODEID"), *nn = getenv("SLURM_NNODES");
	char node[64];

	if (o->n)
		return 0;	/* --node given */
	snprintf(node, sizeof(node), "%.20s/%.20s", id ? id : "", nn ? nn : "");
	if (!id || !nn || coord_parse_node(node, &o->rank, &o->n)) {
		fprintf(stderr, "ibckpt: " AGENT_ENV " is set, but not SLURM_NODEID and "
			"SLURM_NNODES: not a task of srun\n");
		return -1;
	}
	if (o->n == 1 && !dir)
		o->n = 0;	/* a job on one node, no directory to meet in */
	return 0;
}

/**
 * slurm_job_finish() - after the options: a --slurm job here, or everywhere
 * @j: the job named; nothing to do unless it is a Slurm step
 * @o: the --node options given; set in an agent (from SLURM_NODEID)
 * @dir: -D DIR, which a step on several nodes needs
 * @flags: SLURM_FANOUT (fan out if no --node), SLURM_SUSPENDED_OK (take a
 *	   suspended step: thaw, status)
 * @argc: how many words @argv has
 * @argv: the command, run again by each agent
 *
 * Return: 0 to go on here with @j naming this node's part; 1 (said) if this
 * node has no part to take, in a job on several nodes (@o->n set): the
 * caller fails the operation's first barrier, so that the other nodes learn
 * it at once; -1 (said) on another error. Does not return when the command
 * fans out.
 */
int slurm_job_finish(struct cli_job *j, struct coord_opts *o, const char *dir,
		     unsigned int flags, int argc, char **argv)
{
	static char cg[4096];
	char marker[48], rec[8192], nodes[4096], nlist[4200], id[48];
	char *argv_step[] = { "scontrol", "show", "step", "-o", id, NULL };
	const char *agent = getenv(AGENT_ENV);
	unsigned long nn;
	char *end;

	if (!j->slurm)
		return 0;
	snprintf(marker, sizeof(marker), "%u.%u", j->slurm_job, j->slurm_step);
	if (agent && !strcmp(agent, marker)) {
		if (o && agent_rank(o, dir))
			return -1;
	} else if ((flags & SLURM_FANOUT) && o && !o->n) {
		/* from anywhere Slurm's commands work: every node of the step does it */
		if (o->run || o->nparts) {
			fprintf(stderr, "ibckpt: --slurm without --node runs on every node of the "
				"step and names the operation itself: no --run\n");
			return -1;
		}
		if (dir && dir[0] != '/') {
			/* each agent starts where srun says: it must find the same one */
			fprintf(stderr, "ibckpt: --slurm takes an absolute -D DIR (every node "
				"must find the same directory), not '%s'\n", dir);
			return -1;
		}
		snprintf(id, sizeof(id), "%s", marker);
		/* srun waits while the job is suspended: say it instead */
		if (job_running(j->slurm_job, "cannot take its step", NULL))
			return -1;
		if (capture(argv_step, rec, sizeof(rec)) || !strstr(rec, "StepId=") ||
		    field(rec, "NodeList", nodes, sizeof(nodes)) ||
		    field(rec, "Nodes", id, sizeof(id))) {
			fprintf(stderr, "ibckpt: no Slurm step %s (scontrol show step %s)\n",
				j->slurm, marker);
			return -1;
		}
		nn = strtoul(id, &end, 10);
		if (*end || !nn || nn > COORD_MAX_NODES) {
			fprintf(stderr, "ibckpt: Slurm step %s: %s nodes?\n", j->slurm, id);
			return -1;
		}
		if (nn > 1 && !dir) {
			fprintf(stderr, "ibckpt: Slurm step %s runs on %lu nodes: -D DIR (a "
				"directory every node sees) is needed\n", j->slurm, nn);
			return -1;
		}
		snprintf(nlist, sizeof(nlist), "--nodelist=%s", nodes);
		return fanout(j->slurm_job, (unsigned int)nn, nlist, marker, false, dir != NULL,
			      argc, argv);
	}
	if (step_cgroup(j, flags & SLURM_SUSPENDED_OK, cg, sizeof(cg)))
		return o && o->n ? 1 : -1;
	return 0;
}

/**
 * slurm_restart_finish() - restart --slurm JOBID: fan out, or be an agent
 * @job: the Slurm job (allocation) the restored job becomes a step of
 * @nodes: how many nodes the checkpoint's job was on
 * @several: the checkpoint is one of a job on several nodes (DIR/part.R, even
 *	     if only one): each agent takes --node R/N
 * @o: set in an agent (from SLURM_NODEID)
 * @argc: how many words @argv has
 * @argv: the command, run again by each agent
 *
 * Return: 0 in an agent (it restores its part and waits for it); -1 (said)
 * on an error. Does not return when the command fans out.
 */
int slurm_restart_finish(unsigned int job, unsigned int nodes, bool several,
			 struct coord_opts *o, int argc, char **argv)
{
	const char *agent = getenv(AGENT_ENV);
	char marker[48];
	long owner;

	snprintf(marker, sizeof(marker), "%u", job);
	if (agent && !strcmp(agent, marker))
		return agent_rank(o, several ? "" : NULL);
	if (o->n || o->nparts || o->run) {
		fprintf(stderr, "ibckpt: restart --slurm runs on every node itself, part R on the "
			"step's node R: no --node, --part or --run\n");
		return -1;
	}
	if (job_running(job, "cannot restart in it", &owner))
		return -1;
	/* slurmctld lets no one but the owner start a step in a job, root included */
	if (owner != (long)getuid()) {
		fprintf(stderr, "ibckpt: cannot restart in Slurm job %u: it is user %ld's; only "
			"its owner may start a step in it (restart in a job of your own)\n", job,
			owner);
		return -1;
	}
	return fanout(job, nodes, NULL, marker, true, several, argc, argv);
}
