/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the restart commands' files share (Documentation/restart.rst):
 * the checkpoint directory (ckptdir.c), criu (criu.c), and the removal of a
 * restored job whose reacquire failed (killtree.c); restart.c runs the
 * phases and the commands.
 */
#ifndef IBCKPT_TOOLS_RESTART_H
#define IBCKPT_TOOLS_RESTART_H

#include <stddef.h>
#include <sys/types.h>
#include "cli.h"
#include "rchan.h"

#define JOB_FILE	"ibckpt-job"
#define JOB_VERSION	1
#define JOB_MAGIC	"ibckpt-job 1"
#define CRIU_DIR	"criu"		/* its images, under the checkpoint directory */
#define DONE_FILE	"ibckpt-complete"	/* written last: the checkpoint is whole */
#define PID_FILE	"restore.pid"	/* criu's: the restored root */
#define PIDS_FILE	"pids"		/* every pid of the tree dumped */

/* The processes of a job, each with its restart channel. */
struct rjob {
	struct rchan *p;
	unsigned int n;
};

/* ckptdir.c */
void rjob_close(struct rjob *j);
void rjob_free(struct rjob *j);
int rjob_add(struct rjob *j, unsigned int pid, int cmd_fd, int reply_fd);
int dir_trusted(const char *dir);
int dir_make(const char *dir);
int write_file(const char *dir, const char *name, const void *buf, size_t len);
int job_save(const char *dir, const struct rjob *j, const struct cli_snaps *l);
int job_load(const char *dir, struct rjob *j);
int snap_load(const char *dir, unsigned int pid, struct cli_snap *s);
void ckpt_timing(const char *phase);

/* criu.c */
int wait_unregistered(const struct rjob *j);
int criu_dump(const char *dir, unsigned int root);
int criu_restore(const char *dir, pid_t *root);

/* killtree.c */
int kill_restored(pid_t root, const struct rjob *j);
int tree_save(const char *dir, pid_t root);
int tree_taken(const char *dir);

#endif
