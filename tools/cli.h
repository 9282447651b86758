/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the ibckpt CLI's commands, each declaration under the file that
 * defines it. The output mode and cli_fail() are out.h's; what the
 * checkpoint and restart files share is restart.h's.
 */
#ifndef IBCKPT_TOOLS_CLI_H
#define IBCKPT_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/ibckpt.h>
#include "nl.h"
#include "out.h"

/*
 * args.c: take the global options (-j, --json) that follow the command out
 * of argv, setting *@json_out, so that the command parses only its own;
 * @valued lists the commands' options that take the next argument as their
 * value (NULL-terminated), which is never taken for -j. Options before the
 * command are left to getopt. Returns the new argc (argv stays
 * NULL-terminated).
 */
int cli_take_global(int argc, char **argv, const char *const *valued, int *json_out);

/*
 * job.c: how a command names a job. Commands add CLI_JOB_OPTIONS to their
 * getopt_long table and pass each option to cli_job_opt() (1: taken, -1:
 * malformed, message printed; 0: not a job option), then the operands to
 * cli_job_finish() (a lone operand is a PGID).
 */
struct cli_job {
	unsigned int type;	/* IBCKPT_JOB_*, 0 if none named */
	unsigned int id;	/* the group, session or root process */
	const char *cgroup;	/* IBCKPT_JOB_CGROUP: its directory */
	uint64_t session;	/* --id: an existing freeze session */
	/*
	 * --slurm JOBID.STEP, a cgroup job: the step's on this node, found
	 * by slurm_job_finish() (slurm.c), which may fan the command out
	 */
	const char *slurm;
	unsigned int slurm_job, slurm_step;
};

enum { CLI_OPT_SESSION = 0x100, CLI_OPT_TREE, CLI_OPT_CGROUP, CLI_OPT_ID, CLI_OPT_SLURM };
#define CLI_JOB_OPTIONS \
	{ "session", required_argument, NULL, CLI_OPT_SESSION }, \
	{ "tree", required_argument, NULL, CLI_OPT_TREE }, \
	{ "cgroup", required_argument, NULL, CLI_OPT_CGROUP }, \
	{ "slurm", required_argument, NULL, CLI_OPT_SLURM }, \
	{ "id", required_argument, NULL, CLI_OPT_ID }
#define CLI_JOB_USAGE "{PGID | --session SID | --tree PID | --cgroup DIR | --slurm JOBID.STEP}"
#define CLI_JOB_BY_ID		1	/* --id SESSION is allowed */
#define CLI_JOB_OPTIONAL	2	/* naming no job is allowed */

/* Parse a process group id; prints the error and returns -1 if malformed. */
int cli_pgid(const char *s, unsigned int *pgid);
int cli_job_opt(int c, const char *arg, struct cli_job *j);
/*
 * Parse a Slurm job id (@step NULL) or JOBID.STEP (@step set); prints the
 * error and returns -1 if malformed.
 */
int cli_slurm_id(const char *s, unsigned int *job, unsigned int *step);
int cli_job_finish(struct cli_job *j, int argc, char **argv, int optind, int flags);
/* Refuse a negative number among the arguments before getopt sees it (-1). */
int cli_job_negative(int argc, char **argv);
const char *cli_job_describe(const struct cli_job *j, char *buf, size_t len);
const char *cli_job_type_name(unsigned int type);
/* "job":{"type":...,"id"|"path":...} (and "pgid" for a process group) */
void cli_job_json(FILE *f, const struct cli_job *j);
/* The reason for a refused dump request: the kernel's, or said from the errno. */
const char *cli_dump_why(int err, const char *ext);

/*
 * slurm.c: after cli_job_finish(), a --slurm job: this node's cgroup of the
 * step, or (SLURM_FANOUT, no --node in @o) the command run on every node of
 * the step through srun, which does not return. Return: 0, or -1 (said).
 */
struct coord_opts;
#define SLURM_FANOUT		1	/* without --node: run on every node of the step */
#define SLURM_SUSPENDED_OK	2	/* a step Slurm suspended is taken */
int slurm_job_finish(struct cli_job *j, struct coord_opts *o, const char *dir,
		     unsigned int flags, int argc, char **argv);

/*
 * session.c: add the job (or session id) to a request; a cgroup is opened
 * and passed as a file descriptor, closed by cli_job_close(). Returns 0, or
 * 1 after printing why not (no such directory).
 */
int cli_job_put(struct nl_msg *m, const struct cli_job *j);
void cli_job_close(void);

/* session.c: what the module says about freeze sessions */
struct cli_session {
	uint64_t id;
	struct cli_job job;	/* cgroup: points into @cgroup */
	char cgroup[4096];	/* PATH_MAX */
	unsigned int procs, state, flags, threads, parked, pending, exited;
	uint64_t freeze_ns;
	/* the providers' part: asked, answered, drained, outstanding, failure */
	unsigned int providers, quiesced, outstanding, quiesce_err, quiesce_pid;
	uint64_t drained;
	/* the module refused that provider's snapshot: why, and the QP if any */
	char quiesce_msg[128];
	unsigned int quiesce_qpn;
	int quiesce_has_qpn;
};

struct cli_sessions {
	struct cli_session *v;
	unsigned int n;
};

struct cli_thread {
	unsigned int tid, tgid, state;
	uint64_t ip;
	int syscall;	/* -1: none */
};

struct cli_threads {
	struct cli_thread *v;
	unsigned int n;
};

/*
 * The sessions @filter names (or all, with an empty filter); 1 if a cgroup
 * could not be opened (said).
 */
int cli_get_sessions(struct ibnl *n, struct cli_job *filter, struct cli_sessions *l,
		     char *ext, size_t extlen);
int cli_get_threads(struct ibnl *n, uint64_t session, struct cli_threads *l,
		    char *ext, size_t extlen);
const char *cli_state_name(unsigned int st);

/*
 * A thread of a session that never parked in it. PENDING: still on its way.
 * Once a session is released (thawed or aborted) a thread that did park is
 * RUNNING again, but so is one whose park request ran only after the
 * release: the module records the user-space instruction pointer
 * (IBCKPT_THREAD_A_USER_IP) when, and only when, a thread parks, so a
 * RUNNING thread with none never parked.
 */
static inline int cli_thread_never_parked(const struct cli_thread *t)
{
	return t->state == IBCKPT_THREAD_PENDING ||
	       (t->state == IBCKPT_THREAD_RUNNING && !t->ip);
}
const char *cli_thread_state_name(unsigned int st);

/* dump.c: the snapshots a frozen job's providers gave, validated */
struct cli_snap {
	unsigned int tgid;
	unsigned char *data;
	uint32_t total;
	uint32_t have;
};

struct kv_list;

struct cli_snaps {
	struct cli_snap *v;
	unsigned int n;
	int bad;		/* pieces out of order: a process changed mid-dump */
	struct kv_list *kv;	/* the kernel's view too, if asked (kview.h) */
};

int cli_get_snapshots(struct cli_job *job, struct cli_snaps *l, const char *what);
/*
 * The same, with the kernel's own view into @kv (IBCKPT_SNAPSHOT_F_KVIEW;
 * kv_free() it): then a job none of whose processes gave a snapshot is not
 * an error, its processes are in @kv.
 */
int cli_get_snapshots_kv(struct cli_job *job, struct cli_snaps *l, struct kv_list *kv,
			 const char *what);
void cli_snaps_free(struct cli_snaps *l);

/* freeze.c: freezing a job and thawing it, for the commands and the checkpoint */
struct freeze_opts {
	unsigned long timeout_ms;	/* the module's: every thread parked within */
	unsigned long persist_s;	/* the module thaws after; 0: when the socket closes */
};

int freeze_timeout(const char *arg, unsigned long *ms);
int freeze_job(struct ibnl *n, const struct cli_job *job, const struct freeze_opts *o,
	       struct cli_session *s);
/* What `ibckpt freeze` prints: session @s of the job @desc names, frozen. */
void freeze_print(const struct cli_session *s, const char *desc, bool persist, bool as_json);
int thaw_session(uint64_t id, double *secs);
void thaw_print(const struct cli_job *job, double secs, bool as_json);
int thaw_session_left(uint64_t id, bool print);

/* The commands, each in the file of its name; main (ibckpt.c) runs them. */
int cmd_status(int argc, char **argv);		/* status.c */
int cmd_freeze(int argc, char **argv);		/* freeze.c */
int cmd_thaw(int argc, char **argv);		/* freeze.c */
int cmd_dump(int argc, char **argv);		/* dump.c */
int cmd_release(int argc, char **argv);		/* release.c */
int cmd_checkpoint(int argc, char **argv);	/* checkpoint.c */
int cmd_reacquire(int argc, char **argv);	/* restart.c */
int cmd_restart(int argc, char **argv);		/* restart.c */
int cmd_criu_action(void);			/* criu.c: as criu's action script */

#endif
