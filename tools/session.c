// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading freeze sessions and their threads (SESSION_GET, THREAD_GET).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ibckpt.h>
#include "cli.h"

/* The cgroup directory a request names; open until the command is done. */
static int cgroup_fd = -1;

int cli_job_put(struct nl_msg *m, const struct cli_job *j)
{
	if (!m)
		return 0;	/* ibnl_call() reports it */
	if (j->session)
		return nla_put_u64(m, IBCKPT_A_SESSION_ID, j->session) ? -ENOMEM : 0;
	if (!j->type)
		return 0;
	if (nla_put_u32(m, IBCKPT_A_JOB_TYPE, j->type))
		return -ENOMEM;
	if (j->type != IBCKPT_JOB_CGROUP)
		return nla_put_u32(m, IBCKPT_A_JOB_ID, j->id) ? -ENOMEM : 0;
	if (cgroup_fd < 0) {
		cgroup_fd = open(j->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cgroup_fd < 0) {
			fprintf(stderr, "ibckpt: %s: %s\n", j->cgroup,
				errno == ENOENT ? "no such cgroup" :
				errno == ENOTDIR ? "not a cgroup v2 directory" : strerror(errno));
			return 1;
		}
	}
	return nla_put_u32(m, IBCKPT_A_CGROUP_FD, (uint32_t)cgroup_fd) ? -ENOMEM : 0;
}

void cli_job_close(void)
{
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	cgroup_fd = -1;
}

/*
 * Add the job to a new request; NULL (the request freed) after an error:
 * *@err is then a negative errno, or 1 when the reason was printed already.
 */
static struct nl_msg *with_job(struct nl_msg *m, struct cli_job *j, int *err)
{
	*err = cli_job_put(m, j);
	if (!*err)
		return m;
	nlmsg_free(m);
	return NULL;
}

const char *cli_state_name(unsigned int st)
{
	static const char *const n[] = {
		[IBCKPT_STATE_FREEZING] = "freezing", [IBCKPT_STATE_FROZEN] = "frozen",
		[IBCKPT_STATE_THAWING] = "thawing", [IBCKPT_STATE_ABORTED] = "aborted",
	};

	return st < sizeof(n) / sizeof(n[0]) && n[st] ? n[st] : "unknown";
}

const char *cli_thread_state_name(unsigned int st)
{
	static const char *const n[] = {
		[IBCKPT_THREAD_PENDING] = "pending", [IBCKPT_THREAD_PARKED] = "parked",
		[IBCKPT_THREAD_RUNNING] = "running", [IBCKPT_THREAD_EXITED] = "exited",
	};

	return st < sizeof(n) / sizeof(n[0]) && n[st] ? n[st] : "unknown";
}

static uint32_t u32_or0(struct nlattr **a, int i)
{
	return a[i] ? nla_get_u32(a[i]) : 0;
}

static int on_session(struct nlattr **a, void *arg)
{
	struct cli_sessions *l = arg;
	struct nlattr *s[IBCKPT_SESSION_A_MAX + 1];
	struct cli_session *v;

	if (!a[IBCKPT_A_SESSION] ||
	    nla_parse_nested(s, IBCKPT_SESSION_A_MAX, a[IBCKPT_A_SESSION], NULL) ||
	    !s[IBCKPT_SESSION_A_ID] || !s[IBCKPT_SESSION_A_JOB_TYPE] || !s[IBCKPT_SESSION_A_STATE])
		return -EBADMSG;
	v = realloc(l->v, sizeof(*v) * (l->n + 1));
	if (!v)
		return -ENOMEM;
	l->v = v;
	v = &l->v[l->n++];
	memset(v, 0, sizeof(*v));
	v->id = nla_get_u64(s[IBCKPT_SESSION_A_ID]);
	v->job.type = nla_get_u32(s[IBCKPT_SESSION_A_JOB_TYPE]);
	v->job.id = u32_or0(s, IBCKPT_SESSION_A_JOB_ID);
	if (s[IBCKPT_SESSION_A_CGROUP])
		snprintf(v->cgroup, sizeof(v->cgroup), "%s",
			 nla_get_string(s[IBCKPT_SESSION_A_CGROUP]));
	v->procs = u32_or0(s, IBCKPT_SESSION_A_PROCS);
	v->state = nla_get_u32(s[IBCKPT_SESSION_A_STATE]);
	v->flags = u32_or0(s, IBCKPT_SESSION_A_FLAGS);
	v->threads = u32_or0(s, IBCKPT_SESSION_A_THREADS);
	v->parked = u32_or0(s, IBCKPT_SESSION_A_PARKED);
	v->pending = u32_or0(s, IBCKPT_SESSION_A_PENDING);
	v->exited = u32_or0(s, IBCKPT_SESSION_A_EXITED);
	v->freeze_ns = s[IBCKPT_SESSION_A_FREEZE_NS] ?
		       nla_get_u64(s[IBCKPT_SESSION_A_FREEZE_NS]) : 0;
	v->providers = u32_or0(s, IBCKPT_SESSION_A_PROVIDERS);
	v->quiesced = u32_or0(s, IBCKPT_SESSION_A_QUIESCED);
	v->outstanding = u32_or0(s, IBCKPT_SESSION_A_OUTSTANDING);
	v->quiesce_err = u32_or0(s, IBCKPT_SESSION_A_QUIESCE_ERR);
	v->quiesce_pid = u32_or0(s, IBCKPT_SESSION_A_QUIESCE_PID);
	if (s[IBCKPT_SESSION_A_QUIESCE_MSG])
		snprintf(v->quiesce_msg, sizeof(v->quiesce_msg), "%s",
			 nla_get_string(s[IBCKPT_SESSION_A_QUIESCE_MSG]));
	v->quiesce_has_qpn = s[IBCKPT_SESSION_A_QUIESCE_QPN] != NULL;
	v->quiesce_qpn = u32_or0(s, IBCKPT_SESSION_A_QUIESCE_QPN);
	v->drained = s[IBCKPT_SESSION_A_DRAINED] ? nla_get_u64(s[IBCKPT_SESSION_A_DRAINED]) : 0;
	return 0;
}

int cli_get_sessions(struct ibnl *n, struct cli_job *filter, struct cli_sessions *l,
		     char *ext, size_t extlen)
{
	struct nl_msg *m;
	unsigned int i;
	int err;

	memset(l, 0, sizeof(*l));
	if (extlen)
		ext[0] = '\0';
	m = with_job(ibnl_msg(n, IBCKPT_CMD_SESSION_GET, NLM_F_DUMP), filter, &err);
	if (err)
		return err;	/* 1: said */
	err = ibnl_call(n, m, on_session, l, ext, extlen);
	/* cgroup paths live in the entries: point at them once realloc is done */
	for (i = 0; i < l->n; i++)
		l->v[i].job.cgroup = l->v[i].cgroup;
	return err;
}

static int on_thread(struct nlattr **a, void *arg)
{
	struct cli_threads *l = arg;
	struct nlattr *t[IBCKPT_THREAD_A_MAX + 1];
	struct cli_thread *v;

	if (!a[IBCKPT_A_THREAD] ||
	    nla_parse_nested(t, IBCKPT_THREAD_A_MAX, a[IBCKPT_A_THREAD], NULL) ||
	    !t[IBCKPT_THREAD_A_TID] || !t[IBCKPT_THREAD_A_STATE])
		return -EBADMSG;
	v = realloc(l->v, sizeof(*v) * (l->n + 1));
	if (!v)
		return -ENOMEM;
	l->v = v;
	v = &l->v[l->n++];
	v->tid = nla_get_u32(t[IBCKPT_THREAD_A_TID]);
	v->tgid = u32_or0(t, IBCKPT_THREAD_A_TGID);
	v->state = nla_get_u32(t[IBCKPT_THREAD_A_STATE]);
	v->ip = t[IBCKPT_THREAD_A_USER_IP] ? nla_get_u64(t[IBCKPT_THREAD_A_USER_IP]) : 0;
	v->syscall = (int)u32_or0(t, IBCKPT_THREAD_A_SYSCALL) - 1;
	return 0;
}

int cli_get_threads(struct ibnl *n, uint64_t session, struct cli_threads *l,
		    char *ext, size_t extlen)
{
	struct nl_msg *m = ibnl_msg(n, IBCKPT_CMD_THREAD_GET, NLM_F_DUMP);

	memset(l, 0, sizeof(*l));
	if (m && nla_put_u64(m, IBCKPT_A_SESSION_ID, session)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	return ibnl_call(n, m, on_thread, l, ext, extlen);
}
