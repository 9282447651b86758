// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring: a self-verifying MPI job for the job-freeze tests. Rank 0 sends
 * rank 1 a message whose every byte depends on the round; rank 1 checks it
 * and answers with its checksum; rank 0 checks the answer. Every 64 rounds
 * an allreduce counts the rounds each rank saw. Rank 0 publishes the round
 * number in a file (mmap) so that a test can see whether the job moves.
 *
 *   ring PROGRESS_FILE STOP_FILE [BYTES]
 *
 * Runs until STOP_FILE exists, then prints "ring: OK rounds=N bytes=B" (rank
 * 0) and exits 0; any mismatch prints what differed and aborts the job.
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned char pattern(uint64_t round, size_t i)
{
	return (unsigned char)((round * 131 + i * 7 + (i >> 8)) & 0xff);
}

static uint64_t checksum(const unsigned char *b, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	size_t bytes = argc > 3 ? (size_t)atol(argv[3]) : 65536, i;
	uint64_t round, sum, want, total, *progress = NULL;
	unsigned char *buf;
	int rank, size, stop = 0, fd;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 3 || size != 2 || !bytes) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np 2 ring PROGRESS_FILE STOP_FILE [BYTES]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(bytes);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (!rank) {
		fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, sizeof(*progress)))
			MPI_Abort(MPI_COMM_WORLD, 1);
		progress = mmap(NULL, sizeof(*progress), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (progress == MAP_FAILED)
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (round = 0; !stop; round++) {
		if (!rank) {
			for (i = 0; i < bytes; i++)
				buf[i] = pattern(round, i);
			MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(&sum, 1, MPI_UINT64_T, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			want = checksum(buf, bytes);
			if (sum != want) {
				fprintf(stderr, "ring: round %llu: checksum %llx, expected %llx\n",
					(unsigned long long)round, (unsigned long long)sum,
					(unsigned long long)want);
				MPI_Abort(MPI_COMM_WORLD, 3);
			}
			__atomic_store_n(progress, round + 1, __ATOMIC_RELAXED);
		} else {
			MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (i = 0; i < bytes; i++)
				if (buf[i] != pattern(round, i)) {
					fprintf(stderr, "ring: round %llu: byte %zu is %u, expected %u\n",
						(unsigned long long)round, i, buf[i],
						pattern(round, i));
					MPI_Abort(MPI_COMM_WORLD, 3);
				}
			sum = checksum(buf, bytes);
			MPI_Send(&sum, 1, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD);
		}
		if (round % 64 == 63) {
			want = round + 1;
			MPI_Allreduce(&want, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
			if (total != 2 * want) {
				fprintf(stderr, "ring: rank %d: %llu rounds in all, expected %llu\n",
					rank, (unsigned long long)total,
					(unsigned long long)(2 * want));
				MPI_Abort(MPI_COMM_WORLD, 3);
			}
			stop = !rank && access(argv[2], F_OK) == 0;
			MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
		}
	}
	if (!rank) {
		printf("ring: OK rounds=%llu bytes=%zu\n", (unsigned long long)round, bytes);
		fflush(stdout);	/* the verdict stands whatever MPI_Finalize does */
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
