// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Barriers between the nodes of a job, through files in a directory every
 * node sees (Documentation/restart.rst, "A job on several nodes").
 *
 * At a barrier each node writes its vote, DIR/coord/RUN/PHASE.vote.R (a
 * code, a reason, data), renamed into place whole. Node 0 reads the votes
 * and writes the verdict, PHASE.verdict; every other node only waits for
 * that one file, so a barrier costs O(N) file operations, not O(N^2). A
 * failed vote decides at once; a node that has not voted when node 0's
 * timeout expires fails the barrier, named.
 *
 * The verdict is created by link(2), which fails if it exists: the first
 * verdict written is the only one. A node whose own, longer, deadline passes
 * without a verdict (node 0 is gone) writes a failed one the same way, and
 * then every node reads the same outcome, whichever was first.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "coord.h"

#define REC_MAGIC	"ibckpt-c"
#define REC_VERSION	1u
#define REC_MAX		(1ull << 32)	/* a vote or verdict larger than this is corrupt */

/* The start of a vote or verdict file; then the reason, then the data. */
struct coord_rec {
	char magic[8];
	uint32_t version;
	uint32_t rank;		/* the voter, or the node that decided */
	int32_t code;
	uint32_t msglen;
	uint64_t datalen;
};

/* In a gathered verdict's data, before each node's data (padded to 8). */
struct coord_item {
	uint32_t rank;
	uint32_t pad;
	uint64_t len;
};

int coord_parse_node(const char *s, unsigned int *rank, unsigned int *n)
{
	unsigned long r, t;
	char *end;

	errno = 0;
	r = strtoul(s, &end, 10);
	if (errno || end == s || *end != '/' || s[0] == '-')
		return -1;
	s = end + 1;
	t = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || t == 0 || t > COORD_MAX_NODES || r >= t)
		return -1;
	*rank = (unsigned int)r;
	*n = (unsigned int)t;
	return 0;
}

/* A run's name becomes a directory's: letters, digits, '.', '_', '-'; not "." or "..". */
int coord_run_id(const char *s)
{
	size_t i, len = strlen(s);

	if (!len || len > 64 || s[0] == '.')
		return -1;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return -1;
	}
	return 0;
}

/*
 * @path is a directory, made if missing, that nobody but its owner (the
 * caller or root) can write: a planted verdict would hand identities to
 * every process of the job.
 */
static int mkdir_ok(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) && errno != EEXIST)
		return -1;
	if (lstat(path, &st))
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022)) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* @name is "done.R", R in decimal as coord_close() writes it: *@rank = R. */
static int done_rank(const char *name, unsigned int *rank)
{
	unsigned long r;
	char *end;

	if (strncmp(name, "done.", 5) || name[5] < '0' || name[5] > '9' ||
	    (name[5] == '0' && name[6]))
		return 0;
	errno = 0;
	r = strtoul(name + 5, &end, 10);
	if (errno || *end || r >= COORD_MAX_NODES)
		return 0;
	*rank = (unsigned int)r;
	return 1;
}

/*
 * The head of the record at @path, checked: a gathered verdict may hold
 * every QP of the job, which run_used() need not read. Return: 0, or -1
 * (none, unreadable, or not a barrier record).
 */
static int rec_head(const char *path, struct coord_rec *h)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, h, sizeof(*h));
	close(fd);
	if (n != (ssize_t)sizeof(*h) || memcmp(h->magic, REC_MAGIC, sizeof(h->magic)) ||
	    h->version != REC_VERSION)
		return -1;
	return 0;
}

/*
 * A run with a barrier passed was used before: its barriers would pass at
 * once. (A failed one may be this run's, decided before this node came: it
 * reads it at its first barrier, as every node does.) Return: 1, 0, or -1.
 */
static int run_used(const char *dir)
{
	char path[4400];
	struct coord_rec h;
	struct dirent *d;
	DIR *dd = opendir(dir);
	size_t len;
	int used = 0;

	if (!dd)
		return -1;
	while (!used && (d = readdir(dd))) {
		len = strlen(d->d_name);
		if (len <= 8 || strcmp(d->d_name + len - 8, ".verdict"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		used = !rec_head(path, &h) && h.code == 0;
	}
	closedir(dd);
	return used;
}

/* How many of ranks 0 to @n - 1 left a done file in @dir (0 if it cannot be read). */
static unsigned int ranks_done(const char *dir, unsigned int n)
{
	unsigned char *seen = calloc((n + 7) / 8, 1);
	unsigned int r, done = 0;
	struct dirent *d;
	DIR *dd = seen ? opendir(dir) : NULL;

	while (dd && (d = readdir(dd))) {
		if (done_rank(d->d_name, &r) && r < n && !(seen[r / 8] & (1u << (r % 8)))) {
			seen[r / 8] |= (unsigned char)(1u << (r % 8));
			done++;
		}
	}
	if (dd)
		closedir(dd);
	free(seen);
	return done;
}

/*
 * The run this process opened last, left as the process exits (every path
 * of a command ends there); not in a child it forked, which exits first.
 * It counts as done only if the command said it succeeded
 * (coord_exit_status()): an exit() on any other path leaves the run's
 * files, which is the safe side.
 */
static struct coord exit_run;
static pid_t exit_pid;
static bool exit_ok;

static void close_opened(void)
{
	if (exit_pid == getpid())
		coord_close(&exit_run, exit_ok);
}

static void close_at_exit(const struct coord *c)
{
	static int registered;

	exit_run = *c;
	exit_pid = getpid();
	if (!registered && !atexit(close_opened))
		registered = 1;
}

/**
 * coord_exit_status() - how this process's command ended
 * @rc: its exit status (0: it succeeded on this node)
 *
 * Called once the command returns, before the process exits and leaves
 * the run it opened (coord_close()).
 */
void coord_exit_status(int rc)
{
	exit_ok = rc == 0;
}

/*
 * Every node opens DIR/coord/RUN (created, DIR too, by whichever comes first).
 * Return: 0, or -1 (said).
 */
int coord_open(struct coord *c, const char *base, const struct coord_opts *o)
{
	char path[4096], *abs;
	int used;

	memset(c, 0, sizeof(*c));
	if (!o->run || coord_run_id(o->run)) {
		fprintf(stderr, "ibckpt: --run takes a name for this operation, the same on every "
			"node and new each time (letters, digits, '.', '_', '-'), not '%s'\n",
			o->run ? o->run : "");
		return -1;
	}
	c->rank = o->rank;
	c->n = o->n;
	c->timeout_ms = o->timeout_ms ? o->timeout_ms : COORD_TIMEOUT_MS;
	c->grace_ms = COORD_GRACE_MS;
	c->poll_max_us = 20000;
	if (mkdir(base, 0700) && errno != EEXIST) {
		fprintf(stderr, "ibckpt: %s: %s\n", base, strerror(errno));
		return -1;
	}
	/* absolute: criu runs its action script in its own work directory */
	abs = realpath(base, NULL);
	if (!abs) {
		fprintf(stderr, "ibckpt: %s: %s\n", base, strerror(errno));
		return -1;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/" COORD_DIR, abs) >= sizeof(path) ||
	    (size_t)snprintf(c->dir, sizeof(c->dir), "%s/%s", path, o->run) >= sizeof(c->dir)) {
		fprintf(stderr, "ibckpt: %s: path too long\n", base);
		free(abs);
		return -1;
	}
	free(abs);
	if (mkdir_ok(path) || mkdir_ok(c->dir)) {
		fprintf(stderr, "ibckpt: %s: %s%s\n", c->dir, strerror(errno),
			errno == EPERM ? " (another user's, or writable by others)" : "");
		return -1;
	}
	used = run_used(c->dir);
	if (used) {
		fprintf(stderr, "ibckpt: %s: %s\n", c->dir, used < 0 ? strerror(errno) :
			"this --run was used before: each operation needs a new one");
		return -1;
	}
	close_at_exit(c);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Write a record to @tmp. Return: 0, or -1 with errno. */
static int rec_write(const char *tmp, unsigned int rank, int code, const char *msg,
		     const void *data, size_t len)
{
	struct coord_rec h = { .version = REC_VERSION, .rank = rank, .code = code };
	size_t mlen = msg ? strlen(msg) : 0;
	int fd, err = 0;
	FILE *f;

	memcpy(h.magic, REC_MAGIC, sizeof(h.magic));
	h.msglen = (uint32_t)mlen;
	h.datalen = len;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	if (fwrite(&h, sizeof(h), 1, f) != 1 || (mlen && fwrite(msg, mlen, 1, f) != 1) ||
	    (len && fwrite(data, len, 1, f) != 1) || fflush(f) || fsync(fileno(f)))
		err = errno ? errno : EIO;
	if (fclose(f) && !err)
		err = errno;
	if (err) {
		unlink(tmp);
		errno = err;
		return -1;
	}
	return 0;
}

/*
 * Read a record. Return: 1 and the record, 0 if there is none yet, -1 if it
 * is corrupt (said in @why).
 */
static int rec_read(const char *path, struct coord_rec *h, char **msg, void **data,
		    char *why, size_t whylen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	ssize_t r;
	int fd;

	*msg = NULL;
	*data = NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(*h) ||
	    (uint64_t)st.st_size > REC_MAX)
		goto bad;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		snprintf(why, whylen, "%.400s: out of memory", path);
		return -1;
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0)
			goto bad;
		got += (size_t)r;
	}
	buf[got] = 0;
	memcpy(h, buf, sizeof(*h));
	/* each length against what is left: their sum could wrap */
	if (memcmp(h->magic, REC_MAGIC, sizeof(h->magic)) || h->version != REC_VERSION ||
	    h->msglen > got - sizeof(*h) || h->datalen != got - sizeof(*h) - h->msglen)
		goto bad;
	close(fd);
	*msg = strndup(buf + sizeof(*h), h->msglen);
	if (h->datalen) {
		*data = malloc(h->datalen);
		if (*data)
			memcpy(*data, buf + sizeof(*h) + h->msglen, h->datalen);
	}
	free(buf);
	if (!*msg || (h->datalen && !*data)) {
		free(*msg);
		free(*data);
		*msg = NULL;
		*data = NULL;
		snprintf(why, whylen, "%s: out of memory", path);
		return -1;
	}
	return 1;
bad:
	close(fd);
	free(buf);
	snprintf(why, whylen, "%s: not a barrier record (corrupt, or another program's)", path);
	return -1;
}

static void path_of(const struct coord *c, char *buf, size_t len, const char *phase,
		    const char *what, int rank)
{
	if (rank >= 0)
		snprintf(buf, len, "%s/%s.%s.%d", c->dir, phase, what, rank);
	else
		snprintf(buf, len, "%s/%s.%s", c->dir, phase, what);
}

/*
 * Write the verdict, unless one exists: then that one stands. Either way
 * @v ends up with the verdict that stands. Return: 0, or -1 (@v says why).
 */
static int verdict_read(struct coord *c, const char *phase, struct coord_verdict *v)
{
	struct coord_rec h;
	char path[4200], *msg;
	void *data;
	int st;

	path_of(c, path, sizeof(path), phase, "verdict", -1);
	st = rec_read(path, &h, &msg, &data, v->why, sizeof(v->why));
	if (st <= 0) {
		if (st < 0)
			v->code = 1;
		return st;
	}
	v->code = h.code;
	v->by = h.rank;
	snprintf(v->why, sizeof(v->why), "%s", msg);
	free(msg);
	v->data = data;
	v->len = h.datalen;
	return 1;
}

/*
 * A verdict exists: read it, trying again a while if it cannot be read yet
 * (a network file system's hiccup), for every node must act on it alike.
 * Return: 0, or -1 (@v says why: this node cannot learn the outcome).
 */
static int verdict_settle(struct coord *c, const char *phase, struct coord_verdict *v)
{
	unsigned int i;
	int st = 0;

	for (i = 0; i < 50; i++) {
		st = verdict_read(c, phase, v);
		if (st > 0)
			return 0;
		usleep(100000);
	}
	if (!v->code)
		v->code = 1;
	if (!st)
		snprintf(v->why, sizeof(v->why), "barrier '%s': its verdict vanished", phase);
	return -1;
}

/*
 * Write the verdict, unless one exists: then that one stands. Either way @v
 * ends up with the verdict that stands (without data: a caller whose
 * verdict stood attaches what it wrote). Return: 1 if ours stood, 0 if
 * another did, -1 if this node cannot tell (@v says why).
 */
static int verdict_write(struct coord *c, const char *phase, int code, unsigned int by,
			 const char *msg, const void *data, size_t len, struct coord_verdict *v)
{
	char path[4200], tmp[4300];

	path_of(c, path, sizeof(path), phase, "verdict", -1);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%u.%ld", path, c->rank, (long)getpid());
	if (rec_write(tmp, by, code, msg, data, len)) {
		snprintf(v->why, sizeof(v->why), "%.400s: %s", tmp, strerror(errno));
		v->code = 1;
		return -1;
	}
	if (!link(tmp, path)) {
		unlink(tmp);
		/* ours stands: what every node reads, without reading it back */
		v->code = code;
		v->by = by;
		snprintf(v->why, sizeof(v->why), "%s", msg ? msg : "");
		return 1;
	}
	if (errno != EEXIST) {
		snprintf(v->why, sizeof(v->why), "%.400s: %s", path, strerror(errno));
		unlink(tmp);
		v->code = 1;
		return -1;
	}
	unlink(tmp);
	return verdict_settle(c, phase, v);
}

static void backoff(unsigned int *us, unsigned int max)
{
	usleep(*us);
	if (*us < max)
		*us = *us * 2 > max ? max : *us * 2;
}

/* The votes node 0 holds while it waits. */
struct tally {
	unsigned int n, got;
	unsigned char *have;
	void **data;
	size_t *len;
};

static void tally_free(struct tally *t)
{
	unsigned int i;

	for (i = 0; t->data && i < t->n; i++)
		free(t->data[i]);
	free(t->data);
	free(t->len);
	free(t->have);
}

/* Every vote's data, as coord_each() walks it. */
static void *tally_gather(const struct tally *t, size_t *out)
{
	size_t total = 0, off = 0;
	unsigned int i;
	char *buf;

	for (i = 0; i < t->n; i++)
		total += sizeof(struct coord_item) + ((t->len[i] + 7u) & ~(size_t)7u);
	buf = calloc(1, total ? total : 1);
	if (!buf)
		return NULL;
	for (i = 0; i < t->n; i++) {
		struct coord_item it = { .rank = i, .len = t->len[i] };

		memcpy(buf + off, &it, sizeof(it));
		off += sizeof(it);
		if (t->len[i])
			memcpy(buf + off, t->data[i], t->len[i]);
		off += (t->len[i] + 7u) & ~(size_t)7u;
	}
	*out = total;
	return buf;
}

/* Names of the nodes that have not voted, for the timeout's reason. */
static void missing_list(const struct tally *t, char *buf, size_t len)
{
	unsigned int i, shown = 0, missing = t->n - t->got;
	size_t off = 0;

	buf[0] = 0;
	for (i = 0; i < t->n && shown < 8; i++) {
		if (t->have[i])
			continue;
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%u",
					shown ? ", " : "", i);
		shown++;
	}
	if (missing > shown && off < len)
		snprintf(buf + off, len - off, " and %u more", missing - shown);
}

static int leader(struct coord *c, const char *phase, int code, const char *msg,
		  const void *data, size_t len, unsigned int flags, coord_decide_fn decide,
		  void *arg, struct coord_verdict *v)
{
	struct tally t = { .n = c->n };
	uint64_t deadline = now_ms() + c->timeout_ms;
	unsigned int i, us = 500;
	char path[4200], why[512], list[128];
	int rc = -1, st;

	t.have = calloc(c->n, 1);
	t.data = calloc(c->n, sizeof(*t.data));
	t.len = calloc(c->n, sizeof(*t.len));
	if (!t.have || !t.data || !t.len) {
		snprintf(v->why, sizeof(v->why), "out of memory");
		v->code = 1;
		goto out;
	}
	if (code) {
		rc = verdict_write(c, phase, code, c->rank, msg, NULL, 0, v);
		goto out;
	}
	t.have[0] = 1;
	t.got = 1;
	if (len) {
		t.data[0] = malloc(len);
		if (!t.data[0]) {
			rc = verdict_write(c, phase, 1, 0, "node 0: out of memory", NULL, 0, v);
			goto out;
		}
		memcpy(t.data[0], data, len);
		t.len[0] = len;
	}
	for (;;) {
		/* a node that gave up on us decided already */
		st = verdict_read(c, phase, v);
		if (st > 0) {
			rc = 0;
			goto out;
		}
		if (st < 0)	/* not readable yet: the one written first stands anyway */
			memset(v, 0, sizeof(*v));
		for (i = 1; i < c->n; i++) {
			struct coord_rec h;
			char *m;
			void *d;

			if (t.have[i])
				continue;
			path_of(c, path, sizeof(path), phase, "vote", (int)i);
			st = rec_read(path, &h, &m, &d, why, sizeof(why));
			if (!st)
				continue;
			if (st < 0 || h.rank != i) {
				char bad[600];

				snprintf(bad, sizeof(bad), "node %u: %s", i,
					 st < 0 ? why : "its vote names another node");
				if (st > 0) {
					free(m);
					free(d);
				}
				rc = verdict_write(c, phase, 1, i, bad, NULL, 0, v);
				goto out;
			}
			if (h.code) {
				rc = verdict_write(c, phase, h.code, i, m, NULL, 0, v);
				free(m);
				free(d);
				goto out;
			}
			free(m);
			t.have[i] = 1;
			t.got++;
			t.data[i] = d;
			t.len[i] = h.datalen;
			us = 500;
		}
		if (t.got == t.n)
			break;
		if (now_ms() >= deadline) {
			missing_list(&t, list, sizeof(list));
			snprintf(why, sizeof(why), "node%s %s did not reach barrier '%s' within %u ms",
				 t.n - t.got > 1 ? "s" : "", list, phase, c->timeout_ms);
			rc = verdict_write(c, phase, 1, 0, why, NULL, 0, v);
			goto out;
		}
		backoff(&us, c->poll_max_us);
	}
	{
		size_t glen = 0;
		void *g = tally_gather(&t, &glen);

		if (!g) {
			rc = verdict_write(c, phase, 1, 0, "node 0: out of memory", NULL, 0, v);
			goto out;
		}
		why[0] = 0;
		st = decide ? decide(arg, g, glen, why, sizeof(why)) : 0;
		if (st && !why[0])
			snprintf(why, sizeof(why), "node 0 refused barrier '%s'", phase);
		if (st) {
			rc = verdict_write(c, phase, st, 0, why, NULL, 0, v);
		} else {
			rc = verdict_write(c, phase, 0, 0, "", flags & COORD_GATHER ? g : NULL,
					   flags & COORD_GATHER ? glen : 0, v);
			if (rc == 1 && (flags & COORD_GATHER)) {
				v->data = g;	/* ours stood: every node reads this */
				v->len = glen;
				g = NULL;
			}
		}
		free(g);
	}
out:
	tally_free(&t);
	return rc < 0 ? -1 : 0;
}

/*
 * coord_vote() - this node's vote at barrier @phase, then the verdict
 * @code, @msg: 0, or this node's failure (a code the caller chooses, its reason)
 * @data, @len: what this node brings (node 0's @decide sees every node's)
 * @flags: COORD_GATHER: @v->data gets every node's data
 * @decide, @arg: node 0's last word once every node voted yes (or NULL)
 *
 * Every node returns the same verdict, or a failure of its own if it could
 * not read it. Phases are names ([a-z0-9.-]), used once per run.
 * Return: 0 if every node agreed (@v->code 0); -1 otherwise, @v->why says
 * which node and why. Free @v with coord_verdict_free().
 */
int coord_vote(struct coord *c, const char *phase, int code, const char *msg, const void *data,
	       size_t len, unsigned int flags, coord_decide_fn decide, void *arg,
	       struct coord_verdict *v)
{
	uint64_t deadline = now_ms() + c->timeout_ms + c->grace_ms;
	char path[4200], tmp[4300], why[512];
	unsigned int us = 500;
	size_t i;
	int st;

	memset(v, 0, sizeof(*v));
	for (i = 0; phase[i]; i++)
		if (!((phase[i] >= 'a' && phase[i] <= 'z') || (phase[i] >= '0' && phase[i] <= '9') ||
		      phase[i] == '.' || phase[i] == '-'))
			break;
	if (!i || phase[i] || i > 64) {
		v->code = 1;
		snprintf(v->why, sizeof(v->why), "'%s' is not a barrier's name", phase);
		return -1;
	}
	if (code && !msg)
		msg = "failed";
	if (c->rank == 0) {
		if (leader(c, phase, code, msg, data, len, flags, decide, arg, v))
			return -1;
		return v->code ? -1 : 0;
	}
	path_of(c, path, sizeof(path), phase, "vote", (int)c->rank);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (rec_write(tmp, c->rank, code, msg, data, len) || rename(tmp, path)) {
		/* no vote: node 0 times out on this node and everyone fails */
		snprintf(why, sizeof(why), "node %u cannot vote: %.400s: %s", c->rank, path,
			 strerror(errno));
		unlink(tmp);
		if (verdict_write(c, phase, 1, c->rank, why, NULL, 0, v) < 0)
			return -1;
		return v->code ? -1 : 0;
	}
	for (;;) {
		st = verdict_read(c, phase, v);
		if (st > 0)
			return v->code ? -1 : 0;
		if (st < 0)	/* not readable yet: look again, as every node does */
			memset(v, 0, sizeof(*v));
		if (now_ms() >= deadline) {
			snprintf(why, sizeof(why), "node 0 decided nothing at barrier '%s' within "
				 "%u ms (node %u gave up)", phase, c->timeout_ms + c->grace_ms,
				 c->rank);
			if (verdict_write(c, phase, 1, c->rank, why, NULL, 0, v) < 0)
				return -1;
			return v->code ? -1 : 0;
		}
		backoff(&us, c->poll_max_us);
	}
}

/*
 * The verdict of @phase if there is one already (another process of this
 * node voted, criu's post-dump action say). Return: 1 and @v, 0 if none
 * yet, -1 if it cannot be read (@v says why).
 */
int coord_verdict_get(struct coord *c, const char *phase, struct coord_verdict *v)
{
	memset(v, 0, sizeof(*v));
	return verdict_read(c, phase, v);
}

/*
 * Remove the run @dir. Only the node whose rename(2) of it to a name no run
 * can have (run names never start with '.') succeeds empties and removes
 * it: another node removing at the same time finds it gone, and a new
 * operation under the same --run, at once after, makes a new directory,
 * never a half-removed one.
 */
static void run_remove(const char *dir)
{
	char gone[4200], path[4500];
	const char *run = strrchr(dir, '/');
	struct dirent *d;
	DIR *dd;

	if (!run || (size_t)snprintf(gone, sizeof(gone), "%.*s/.gone.%s.%ld", (int)(run - dir),
				     dir, run + 1, (long)getpid()) >= sizeof(gone) ||
	    rename(dir, gone))
		return;
	dd = opendir(gone);
	if (!dd)
		return;
	while ((d = readdir(dd))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", gone, d->d_name);
		unlink(path);
	}
	closedir(dd);
	rmdir(gone);
}

/**
 * coord_close() - this node is done with the run
 * @c: the run, as coord_open() opened it
 * @ok: this node's operation succeeded
 *
 * A node that succeeded leaves DIR/coord/RUN/done.RANK. The last node out,
 * once every node left so, removes the run's directory: no node reads it
 * again. (A barrier may fail on the way and the operation still succeed:
 * a checkpoint's peer check that asks for another freeze.) A run that
 * failed on a node, or that a node never left, stays, for a node that
 * comes late reads the failure there, and for whoever looks into it.
 * Called by the CLI as it exits (coord_open() arranges it). Never by
 * criu's post-dump action (tools/nodes.c): its node still has barriers
 * ahead when it runs.
 */
void coord_close(struct coord *c, bool ok)
{
	char path[4200];
	int fd;

	if (!c->dir[0] || !c->n)
		return;
	if (c != &exit_run && !strcmp(c->dir, exit_run.dir))
		exit_run.dir[0] = 0;	/* closed here: not again at exit */
	if (!ok)
		goto out;
	snprintf(path, sizeof(path), "%s/done.%u", c->dir, c->rank);
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "ibckpt: %s: %s (the run's files stay)\n", path, strerror(errno));
		goto out;
	}
	close(fd);
	if (ranks_done(c->dir, c->n) == c->n)
		run_remove(c->dir);
out:
	c->dir[0] = 0;
}

void coord_verdict_free(struct coord_verdict *v)
{
	free(v->data);
	v->data = NULL;
	v->len = 0;
}

/*
 * Walk a gathered verdict's data (or what node 0's decide() gets): @fn for
 * each node in rank order. Return: 0, @fn's first non-zero, or -1 if @votes
 * is malformed.
 */
int coord_each(const void *votes, size_t len,
	       int (*fn)(void *arg, unsigned int rank, const void *data, size_t len), void *arg)
{
	const char *p = votes;
	size_t off = 0, step;
	int rc;

	while (off < len) {
		struct coord_item it;

		if (len - off < sizeof(it))
			return -1;
		memcpy(&it, p + off, sizeof(it));
		off += sizeof(it);
		if (it.len > len - off)
			return -1;
		rc = fn(arg, it.rank, p + off, (size_t)it.len);
		if (rc)
			return rc;
		step = ((size_t)it.len + 7u) & ~(size_t)7u;
		if (step > len - off)
			step = len - off;
		off += step;
	}
	return 0;
}
