// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The client's verdict on a completed fetch-and-add, whose result buffer
 * held a poison (all ones) when it was posted.
 *
 * The value fetched must be the QP's count of adds before this one. A
 * result that is still the poison when the completion is polled is either
 * late (written after the completion was delivered: an ordering bug, always
 * an error) or never written at all. The latter is a defect of soft-RoCE in
 * Debian's 6.1 kernel, seen without ibckpt: once in 1.48 million
 * fetch-and-adds of traffic paused and resumed at random (SIGSTOP/SIGCONT),
 * a fetch-and-add completed successfully and its value never arrived. A
 * candidate is rxe_comp.c, which completes a WQE when a response behind the
 * completer's PSN matches the WQE's last PSN, without the atomic's copy. The
 * add itself is executed exactly once all the same, and that is still
 * checked: the next fetch on the QP must get the count after it, and at the
 * end the server compares each QP's counter with the adds the client
 * posted. So such a completion is counted, reported, and tolerated up to -L
 * times per run (default 2; 0: none).
 */
#include "traffic.h"

enum tatomic_verdict tatomic_verdict(struct tctx *t, uint64_t at_completion, uint64_t later,
				     uint64_t expect)
{
	if (at_completion != UINT64_MAX)
		return at_completion == expect ? TATOMIC_OK : TATOMIC_WRONG;
	if (later != UINT64_MAX)
		return TATOMIC_LATE;
	if (++t->st.unanswered > t->o.max_unanswered)
		return TATOMIC_TOO_MANY;
	return TATOMIC_UNANSWERED;
}
