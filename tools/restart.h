/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the files of the checkpoint, release, reacquire and restart share
 * (Documentation/restart.rst), each declaration under the file that
 * defines it. The commands themselves are in cli.h.
 */
#ifndef IBCKPT_TOOLS_RESTART_H
#define IBCKPT_TOOLS_RESTART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/ibckpt_restart.h>
#include "cli.h"
#include "coord.h"
#include "rchan.h"

/* job_chans.c: a job's processes and their restart channels */
#define PHASE_MS	60000	/* a phase of one process: re-creating can take long */

struct job_chans {
	struct rchan *p;
	unsigned int n;
	bool undone;		/* its last failed reacquire was undone in every process */
};

void job_chans_close(struct job_chans *j);
void job_chans_free(struct job_chans *j);
int job_chans_add(struct job_chans *j, unsigned int pid, int cmd_fd, int reply_fd);
int job_chans_of(const struct cli_snaps *l, struct job_chans *j);
int job_chans_open(struct job_chans *j);
int job_chans_reacquire(struct job_chans *j, const struct ibckpt_rdev_map *map,
			uint32_t nmap, uint32_t *nids_out, struct coord *co);

/* ckptdir.c: the checkpoint directory */
#define JOB_FILE	"ibckpt-job"
#define JOB_VERSION	1
#define JOB_MAGIC	"ibckpt-job 1"
#define CRIU_DIR	"criu"		/* its images, under the checkpoint directory */
#define DONE_FILE	"ibckpt-complete"	/* written last: the checkpoint is whole */
#define PID_FILE	"restore.pid"	/* criu's: the restored root */
#define PIDS_FILE	"pids"		/* every pid of the tree dumped */
#define SHELL_JOB_FILE	"criu-shell-job"	/* the root led no session: criu --shell-job */
#define NODES_FILE	"ibckpt-nodes"	/* DIR of a job on several nodes: how many */
#define NODES_MAGIC	"ibckpt-nodes 1"
#define PART_PREFIX	"part."		/* DIR/part.P: node P's part, a checkpoint of its own */

int dir_trusted(const char *dir);
int dir_make(const char *dir);
int write_file(const char *dir, const char *name, const void *buf, size_t len);
int job_save(const char *dir, const struct job_chans *j, const struct cli_snaps *l);
int job_load(const char *dir, struct job_chans *j);
int snap_load(const char *dir, unsigned int pid, struct cli_snap *s);
void part_dir(char *buf, size_t len, const char *dir, unsigned int part);
int nodes_save(const char *dir, unsigned int n);
int nodes_load(const char *dir, unsigned int *n);
void ckpt_timing(const char *phase);

/* release.c: a frozen job's release, and its reacquire in place */
int release_job(struct cli_job *job, const char *dir, const char *what, struct coord *co,
		unsigned int *released);
void release_print(unsigned int n, const char *dir, bool as_json);
int reacquire_job(struct job_chans *j, const char *dir, const struct ibckpt_rdev_map *map,
		  uint32_t nmap, bool hint, struct coord *co, uint32_t *nids);
void reacquire_print(unsigned int n, uint32_t nids, const char *dir, bool as_json);

/* criu.c */
int wait_unregistered(const struct job_chans *j);
int criu_dump(const char *dir, unsigned int root, uint64_t session);
int criu_restore(const char *dir, pid_t *root);

/* killtree.c */
int kill_restored(pid_t root, const struct job_chans *j);
int tree_save(const char *dir, pid_t root);
int tree_taken(const char *dir);
bool pid_taken(pid_t pid);

/* nodes.c: a job on several nodes (restart.rst) */
enum { NODES_OPT_NODE = 0x2000, NODES_OPT_RUN, NODES_OPT_TIMEOUT, NODES_OPT_PART };
#define NODES_OPTIONS \
	{ "node", required_argument, NULL, NODES_OPT_NODE }, \
	{ "run", required_argument, NULL, NODES_OPT_RUN }, \
	{ "node-timeout", required_argument, NULL, NODES_OPT_TIMEOUT }
#define NODES_USAGE	"--node RANK/N --run ID [--node-timeout MS]"
int nodes_opt(int c, const char *arg, struct coord_opts *o);
int nodes_finish(struct coord_opts *o);
int nodes_vote(struct coord *co, const char *name, int rc, const char *msg, const void *data,
	       size_t len, unsigned int flags, coord_decide_fn decide, void *arg,
	       struct coord_verdict *out);
int nodes_vote_peers(struct coord *co, const struct cli_snaps *l, struct coord_verdict *all);
int nodes_verdict_snaps(const struct coord_verdict *all, const void ***snaps, unsigned int *n);
int nodes_post_dump_env(const struct coord *co, const char *phase);
void nodes_post_dump_env_clear(void);
int nodes_post_dump(void);

/* prepare.c: PREPARE of every process of a frozen job (restart.rst, "Exactly once") */
#define PREPARE_AGAIN	3	/* more asks of a process with an atomic fence outstanding */
typedef int (*prepare_call_fn)(void *arg, unsigned int i, uint32_t flags, char *why,
			       size_t whylen);
int prepare_job(unsigned int n, prepare_call_fn call, void *arg, const char *what);

/* rwait.c: restart --wait */
#define RWAIT_COMM	"ibckpt-wait"	/* its name (comm) while it waits */
int rwait_prepare(void);
int rwait(const pid_t *root, unsigned int n);

/* cgtree.c: a cgroup job's one process tree, for criu */
int cgroup_tree_root(const char *path, pid_t *root);

/* slurm.c: restart --slurm JOBID (cli.h: a Slurm step as a job) */
int slurm_restart_finish(unsigned int job, unsigned int nodes, bool several,
			 struct coord_opts *o, int argc, char **argv);

#endif
