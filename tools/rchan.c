// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The restart channel, CLI side. The descriptors come from a snapshot or a
 * checkpoint directory, which may be stale or forged: the process must run
 * the provider and each descriptor must be a pipe whose both ends it holds,
 * or nothing is written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/ibckpt_restart.h>
#include "rchan.h"

/* Does process @pid have the ibckpt provider mapped? */
static bool runs_provider(unsigned int pid)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libibckpt-rdmav34.so") != NULL;
	if (f)
		fclose(f);
	return found;
}

/*
 * Does process @pid hold both ends of the pipe @ino, as a provider holds its
 * restart channel's? (A duplicate of one end does not count: fdinfo's
 * flags tell a read end from a write end.)
 */
static bool holds_both_ends(unsigned int pid, ino_t ino)
{
	char path[64], link[64], want[40], line[128];
	bool rd = false, wr = false;
	unsigned int flags;
	struct dirent *d;
	ssize_t len;
	FILE *info;
	DIR *dir;

	snprintf(want, sizeof(want), "pipe:[%llu]", (unsigned long long)ino);
	snprintf(path, sizeof(path), "/proc/%u/fd", pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%u/fd/%.20s", pid, d->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (strcmp(link, want))
			continue;
		snprintf(path, sizeof(path), "/proc/%u/fdinfo/%.20s", pid, d->d_name);
		info = fopen(path, "re");
		while (info && fgets(line, sizeof(line), info))
			if (sscanf(line, "flags: %o", &flags) == 1) {
				rd |= (flags & O_ACCMODE) == O_RDONLY;
				wr |= (flags & O_ACCMODE) == O_WRONLY;
			}
		if (info)
			fclose(info);
	}
	if (dir)
		closedir(dir);
	return rd && wr;
}

/*
 * O_NONBLOCK: a pipe end with nobody at the other end (not a provider's)
 * is refused (ENXIO) rather than waited for; reads and writes then have a
 * deadline (rchan_call()).
 */
static int open_pipe(unsigned int pid, int fd, int flags, char *why, size_t whylen)
{
	char path[64];
	struct stat st;
	int f;

	snprintf(path, sizeof(path), "/proc/%u/fd/%d", pid, fd);
	f = open(path, flags | O_NONBLOCK | O_CLOEXEC);
	if (f < 0) {
		snprintf(why, whylen, "process %u: cannot open its restart channel (%s): %s", pid,
			 path, strerror(errno));
		return -1;
	}
	if (fstat(f, &st) || !S_ISFIFO(st.st_mode) || !holds_both_ends(pid, st.st_ino)) {
		snprintf(why, whylen, "process %u: descriptor %d is not its restart channel", pid,
			 fd);
		close(f);
		return -1;
	}
	return f;
}

/*
 * The checkpoint directory names the process and its descriptors: before
 * anything is written, the process must run the provider and each
 * descriptor must be a pipe it holds both ends of, as a provider's restart
 * channel is (a stale directory names a pid now someone else's).
 */
int rchan_open(struct rchan *c, char *why, size_t whylen)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%u", c->pid);
	c->cmd = c->reply = -1;
	if (!access(path, F_OK) && !runs_provider(c->pid)) {
		snprintf(why, whylen, "process %u runs no ibckpt provider: it is not the "
			 "checkpointed process", c->pid);
		return -1;
	}
	c->cmd = open_pipe(c->pid, c->cmd_fd, O_WRONLY, why, whylen);
	c->reply = c->cmd < 0 ? -1 : open_pipe(c->pid, c->reply_fd, O_RDONLY | O_NONBLOCK,
					       why, whylen);
	if (c->reply < 0) {
		rchan_close(c);
		return -1;
	}
	return 0;
}

void rchan_close(struct rchan *c)
{
	if (c->cmd >= 0)
		close(c->cmd);
	if (c->reply >= 0)
		close(c->reply);
	c->cmd = c->reply = -1;
}

static int ms_left(const struct timespec *end)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (int)ms : 0;
}

/* Write @len bytes before @end (a provider that stopped reading must not hold us). */
static int write_all(int fd, const void *buf, size_t len, const struct timespec *end)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	size_t put = 0;
	ssize_t r;

	while (put < len) {
		r = write(fd, (const char *)buf + put, len - put);
		if (r > 0) {
			put += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 || errno != EAGAIN)
			return -1;
		if (poll(&p, 1, ms_left(end)) == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
	}
	return 0;
}

/* What an earlier CLI left unread in the reply pipe. */
static void drain(int fd)
{
	char junk[4096];

	while (read(fd, junk, sizeof(junk)) > 0)
		;
}

/* Read exactly @len bytes before @end; 0, or -1 with errno (ETIMEDOUT, EPIPE). */
static int read_all(int fd, void *buf, size_t len, const struct timespec *end)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = read(fd, (char *)buf + got, len - got);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r == 0) {
			errno = EPIPE;
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		r = poll(&p, 1, ms_left(end));
		if (r == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
	}
	return 0;
}

int rchan_call(struct rchan *c, uint32_t type, uint32_t flags, const void *payload,
	       uint32_t len, int timeout_ms, void **out, uint32_t *outlen, char *why,
	       size_t whylen)
{
	static uint32_t seq;
	struct ibckpt_rmsg h = { .magic = IBCKPT_RMSG_MAGIC, .type = type, .status = flags,
				 .len = len };
	struct timespec end;
	char *data = NULL;
	uint32_t want;

	/* numbered from a per-command start: another CLI's replies never match */
	if (!seq) {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		seq = (uint32_t)getpid() << 16 ^ (uint32_t)t.tv_nsec;
	}
	h.seq = ++seq ? seq : ++seq;

	if (out) {
		*out = NULL;
		*outlen = 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	drain(c->reply);
	if (write_all(c->cmd, &h, sizeof(h), &end) ||
	    (len && write_all(c->cmd, payload, len, &end))) {
		snprintf(why, whylen, "process %u: sending to its restart channel: %s", c->pid,
			 errno == ETIMEDOUT ? "timed out" : strerror(errno));
		return -1;
	}
	want = h.seq;
	for (;;) {	/* replies to commands before ours are read and dropped */
		if (read_all(c->reply, &h, sizeof(h), &end))
			goto broken;
		if (h.magic != IBCKPT_RMSG_MAGIC || h.type != IBCKPT_RMSG_REPLY ||
		    h.len > IBCKPT_RMSG_MAX_LEN) {
			snprintf(why, whylen, "process %u: not a reply on its restart channel",
				 c->pid);
			return -1;
		}
		if (h.len) {
			data = malloc(h.len + 1);
			if (!data) {
				snprintf(why, whylen, "out of memory");
				return -1;
			}
			if (read_all(c->reply, data, h.len, &end)) {
				free(data);
				goto broken;
			}
			data[h.len] = 0;
		}
		if (h.seq == want && h.cmd == type)
			break;
		free(data);
		data = NULL;
	}
	if (h.status) {
		snprintf(why, whylen, "process %u: %s", c->pid, data ? data : strerror((int)h.status));
		free(data);
		return (int)h.status;
	}
	if (out) {
		*out = data;
		*outlen = h.len;
	} else {
		free(data);
	}
	return 0;
broken:
	snprintf(why, whylen, "process %u: no reply on its restart channel: %s", c->pid,
		 errno == ETIMEDOUT ? "timed out" : strerror(errno));
	return -1;
}
