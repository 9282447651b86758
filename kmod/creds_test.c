// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: when two credentials are identical in content
 * (ibckpt_creds_same()), which decides whether a thread may take the control
 * thread's credentials object.
 *
 * The case list "one_field_differs" changes one field of a copy at a time:
 * each case fails if that field were left out of the comparison. The case
 * "every_member_is_known" fails if struct cred has a member that is neither
 * in that list nor among the few that are not compared (reference counts,
 * RCU head): a kernel that grows struct cred needs the comparison reviewed.
 */
#include <kunit/test.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/kernel.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/uidgid.h>

#include "creds.h"

#define BLOB_LEN	16
#define SECID		7

/* Objects only compared by address. */
static char fake_objs[16];
#define FAKE(type, i)	((type *)&fake_objs[i])

static struct group_info *groups(struct kunit *test, int n, const int *gids)
{
	struct group_info *gi;
	int i;

	gi = kunit_kzalloc(test, struct_size(gi, gid, n), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, gi);
	atomic_set(&gi->usage, 1);
	gi->ngroups = n;
	for (i = 0; i < n; i++)
		gi->gid[i] = KGIDT_INIT(gids[i]);
	return gi;
}

static const int base_gids[] = { 10, 20, 30 };

/* A credential with a distinct value in every field. */
static struct cred *base_cred(struct kunit *test)
{
	struct cred *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	atomic_long_set(&c->usage, 1);
	c->uid = KUIDT_INIT(1000);
	c->gid = KGIDT_INIT(1001);
	c->suid = KUIDT_INIT(1002);
	c->sgid = KGIDT_INIT(1003);
	c->euid = KUIDT_INIT(1004);
	c->egid = KGIDT_INIT(1005);
	c->fsuid = KUIDT_INIT(1006);
	c->fsgid = KGIDT_INIT(1007);
	c->securebits = 0x5;
	cap_raise(c->cap_inheritable, CAP_NET_RAW);
	cap_raise(c->cap_permitted, CAP_NET_RAW);
	cap_raise(c->cap_permitted, CAP_SYS_ADMIN);
	c->cap_effective = c->cap_permitted;
	c->cap_bset = CAP_FULL_SET;
	cap_raise(c->cap_ambient, CAP_NET_RAW);
#ifdef CONFIG_KEYS
	c->jit_keyring = 2;
	c->session_keyring = FAKE(struct key, 0);
	c->process_keyring = FAKE(struct key, 1);
	c->thread_keyring = NULL;
	c->request_key_auth = NULL;
#endif
#ifdef CONFIG_SECURITY
	{
		u8 *blob = kunit_kzalloc(test, BLOB_LEN, GFP_KERNEL);
		int i;

		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, blob);
		for (i = 0; i < BLOB_LEN; i++)
			blob[i] = i + 1;
		c->security = blob;
	}
#endif
	c->user = FAKE(struct user_struct, 4);
	c->user_ns = FAKE(struct user_namespace, 5);
	c->ucounts = FAKE(struct ucounts, 6);
	c->group_info = groups(test, ARRAY_SIZE(base_gids), base_gids);
	return c;
}

/* Another object with the same content: its own LSM blob, the same groups. */
static struct cred *copy_cred(struct kunit *test, const struct cred *a)
{
	struct cred *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	*c = *a;
#ifdef CONFIG_SECURITY
	if (a->security) {
		c->security = kunit_kzalloc(test, BLOB_LEN, GFP_KERNEL);
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c->security);
		memcpy(c->security, a->security, BLOB_LEN);
	}
#endif
	return c;
}

/* ibckpt_creds_same(), checked to be symmetric at every use */
static bool same(struct kunit *test, const struct cred *a, u32 sa,
		 const struct cred *b, u32 sb)
{
	bool ab = ibckpt_creds_same(a, sa, b, sb);

	KUNIT_EXPECT_EQ_MSG(test, ab, ibckpt_creds_same(b, sb, a, sa), "not symmetric");
	return ab;
}

static void toggle_cap(kernel_cap_t *c, int cap)
{
	if (cap_raised(*c, cap))
		cap_lower(*c, cap);
	else
		cap_raise(*c, cap);
}

enum cred_field {
	F_UID, F_GID, F_SUID, F_SGID, F_EUID, F_EGID, F_FSUID, F_FSGID,
	F_SECUREBITS,
	F_CAP_INH, F_CAP_PERM, F_CAP_EFF, F_CAP_EFF_HIGH, F_CAP_BSET, F_CAP_AMB,
	F_JIT, F_SESSION_KR, F_PROCESS_KR, F_THREAD_KR, F_REQKEY_AUTH,
	F_LSM_BLOB, F_LSM_NO_BLOB, F_SECID,
	F_USER, F_USER_NS, F_UCOUNTS,
	F_GROUPS_GID, F_GROUPS_COUNT,
};

/**
 * struct field_case - one field of struct cred made to differ
 * @member: the member of struct cred it is ("" for the secid, not one)
 * @desc: the case's name
 * @f: what to change
 */
struct field_case {
	const char *member;
	const char *desc;
	enum cred_field f;
};

static const struct field_case field_cases[] = {
	{ "uid", "uid", F_UID },
	{ "gid", "gid", F_GID },
	{ "suid", "suid", F_SUID },
	{ "sgid", "sgid", F_SGID },
	{ "euid", "euid", F_EUID },
	{ "egid", "egid", F_EGID },
	{ "fsuid", "fsuid", F_FSUID },
	{ "fsgid", "fsgid", F_FSGID },
	{ "securebits", "securebits", F_SECUREBITS },
	{ "cap_inheritable", "cap_inheritable", F_CAP_INH },
	{ "cap_permitted", "cap_permitted", F_CAP_PERM },
	{ "cap_effective", "cap_effective", F_CAP_EFF },
	{ "cap_effective", "cap_effective_high_word", F_CAP_EFF_HIGH },
	{ "cap_bset", "cap_bset", F_CAP_BSET },
	{ "cap_ambient", "cap_ambient", F_CAP_AMB },
#ifdef CONFIG_KEYS
	{ "jit_keyring", "jit_keyring", F_JIT },
	{ "session_keyring", "session_keyring", F_SESSION_KR },
	{ "process_keyring", "process_keyring", F_PROCESS_KR },
	{ "thread_keyring", "thread_keyring_null_vs_set", F_THREAD_KR },
	{ "request_key_auth", "request_key_auth", F_REQKEY_AUTH },
#endif
#ifdef CONFIG_SECURITY
	{ "security", "lsm_blob_byte", F_LSM_BLOB },
	{ "security", "lsm_blob_vs_none", F_LSM_NO_BLOB },
#endif
	{ "", "lsm_secid", F_SECID },
	{ "user", "user", F_USER },
	{ "user_ns", "user_ns", F_USER_NS },
	{ "ucounts", "ucounts", F_UCOUNTS },
	{ "group_info", "group_info_other_gid", F_GROUPS_GID },
	{ "group_info", "group_info_more_groups", F_GROUPS_COUNT },
};

static void mutate(struct kunit *test, struct cred *c, u32 *secid, enum cred_field f)
{
	static const int other_gids[] = { 10, 21, 30 };
	static const int more_gids[] = { 10, 20, 30, 40 };

	switch (f) {
	case F_UID:
		c->uid = KUIDT_INIT(__kuid_val(c->uid) + 100);
		break;
	case F_GID:
		c->gid = KGIDT_INIT(__kgid_val(c->gid) + 100);
		break;
	case F_SUID:
		c->suid = KUIDT_INIT(__kuid_val(c->suid) + 100);
		break;
	case F_SGID:
		c->sgid = KGIDT_INIT(__kgid_val(c->sgid) + 100);
		break;
	case F_EUID:
		c->euid = KUIDT_INIT(__kuid_val(c->euid) + 100);
		break;
	case F_EGID:
		c->egid = KGIDT_INIT(__kgid_val(c->egid) + 100);
		break;
	case F_FSUID:
		c->fsuid = KUIDT_INIT(__kuid_val(c->fsuid) + 100);
		break;
	case F_FSGID:
		c->fsgid = KGIDT_INIT(__kgid_val(c->fsgid) + 100);
		break;
	case F_SECUREBITS:
		c->securebits ^= 0x2;
		break;
	case F_CAP_INH:
		toggle_cap(&c->cap_inheritable, CAP_NET_RAW);
		break;
	case F_CAP_PERM:
		toggle_cap(&c->cap_permitted, CAP_SYS_ADMIN);
		break;
	case F_CAP_EFF:
		toggle_cap(&c->cap_effective, CAP_SYS_ADMIN);
		break;
	case F_CAP_EFF_HIGH:	/* capability 40: the second 32-bit word */
		toggle_cap(&c->cap_effective, CAP_CHECKPOINT_RESTORE);
		break;
	case F_CAP_BSET:
		toggle_cap(&c->cap_bset, CAP_SYS_MODULE);
		break;
	case F_CAP_AMB:
		toggle_cap(&c->cap_ambient, CAP_NET_RAW);
		break;
#ifdef CONFIG_KEYS
	case F_JIT:
		c->jit_keyring++;
		break;
	case F_SESSION_KR:
		c->session_keyring = FAKE(struct key, 7);
		break;
	case F_PROCESS_KR:
		c->process_keyring = NULL;
		break;
	case F_THREAD_KR:
		c->thread_keyring = FAKE(struct key, 8);
		break;
	case F_REQKEY_AUTH:
		c->request_key_auth = FAKE(struct key, 9);
		break;
#endif
#ifdef CONFIG_SECURITY
	case F_LSM_BLOB:
		((u8 *)c->security)[BLOB_LEN - 1] ^= 0x80;
		break;
	case F_LSM_NO_BLOB:
		c->security = NULL;
		break;
#endif
	case F_SECID:
		(*secid)++;
		break;
	case F_USER:
		c->user = FAKE(struct user_struct, 10);
		break;
	case F_USER_NS:
		c->user_ns = FAKE(struct user_namespace, 11);
		break;
	case F_UCOUNTS:
		c->ucounts = FAKE(struct ucounts, 12);
		break;
	case F_GROUPS_GID:
		c->group_info = groups(test, ARRAY_SIZE(other_gids), other_gids);
		break;
	case F_GROUPS_COUNT:
		c->group_info = groups(test, ARRAY_SIZE(more_gids), more_gids);
		break;
	default:
		KUNIT_FAIL(test, "field %d not handled", f);
	}
}

static void field_case_desc(const struct field_case *c, char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(field, field_cases, field_case_desc);

/* Each field alone makes two otherwise equal credentials differ. */
static void one_field_differs(struct kunit *test)
{
	const struct field_case *fc = test->param_value;
	struct cred *a = base_cred(test), *b = copy_cred(test, a);
	u32 sa = SECID, sb = SECID;

	KUNIT_ASSERT_TRUE(test, same(test, a, sa, b, sb));
	mutate(test, b, &sb, fc->f);
	KUNIT_EXPECT_FALSE_MSG(test, same(test, a, sa, b, sb), "%s differs but compares equal",
			       fc->desc);
}

static void same_object(struct kunit *test)
{
	struct cred *a = base_cred(test);

	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, a, SECID));
	/* the secids are the caller's word: different ones are a difference */
	KUNIT_EXPECT_FALSE(test, same(test, a, SECID, a, SECID + 1));
}

static void equal_contents(struct kunit *test)
{
	struct cred *a = base_cred(test), *b = copy_cred(test, a);

	KUNIT_EXPECT_PTR_NE(test, a, b);
#ifdef CONFIG_SECURITY
	KUNIT_EXPECT_PTR_NE(test, a->security, b->security);
#endif
	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, b, SECID));
}

static void group_info_same_object(struct kunit *test)
{
	struct cred *a = base_cred(test), *b = copy_cred(test, a);

	KUNIT_ASSERT_PTR_EQ(test, a->group_info, b->group_info);
	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, b, SECID));
}

static void group_info_same_content(struct kunit *test)
{
	struct cred *a = base_cred(test), *b = copy_cred(test, a);

	b->group_info = groups(test, ARRAY_SIZE(base_gids), base_gids);
	KUNIT_ASSERT_PTR_NE(test, a->group_info, b->group_info);
	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, b, SECID));
}

static void group_info_different_content(struct kunit *test)
{
	static const int fewer[] = { 10, 20 };
	struct cred *a = base_cred(test), *b = copy_cred(test, a);

	b->group_info = groups(test, ARRAY_SIZE(fewer), fewer);
	KUNIT_EXPECT_FALSE(test, same(test, a, SECID, b, SECID));
	/* no groups at all, in two objects: the same */
	a->group_info = groups(test, 0, NULL);
	b->group_info = groups(test, 0, NULL);
	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, b, SECID));
}

static void thread_keyrings(struct kunit *test)
{
#ifdef CONFIG_KEYS
	struct cred *a = base_cred(test), *b = copy_cred(test, a);

	a->thread_keyring = FAKE(struct key, 13);
	b->thread_keyring = FAKE(struct key, 14);
	KUNIT_EXPECT_FALSE(test, same(test, a, SECID, b, SECID));
	b->thread_keyring = a->thread_keyring;
	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, b, SECID));
#else
	kunit_skip(test, "CONFIG_KEYS is off");
#endif
}

static void lsm_blobs(struct kunit *test)
{
#ifdef CONFIG_SECURITY
	struct cred *a = base_cred(test), *b = copy_cred(test, a);
	u8 *longer;

	/* no LSM with a cred blob: both NULL */
	a->security = NULL;
	b->security = NULL;
	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, b, SECID));
	/*
	 * A KFENCE object's ksize() is exact, a slab object's the bucket's:
	 * the blob's bytes are compared, and the zeroes that follow them in
	 * the longer one do not matter.
	 */
	a = base_cred(test);
	b = copy_cred(test, a);
	longer = kunit_kzalloc(test, 4 * BLOB_LEN, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, longer);
	memcpy(longer, a->security, BLOB_LEN);
	b->security = longer;
	KUNIT_EXPECT_TRUE(test, same(test, a, SECID, b, SECID));
	longer[0] ^= 1;
	KUNIT_EXPECT_FALSE(test, same(test, a, SECID, b, SECID));
#else
	kunit_skip(test, "CONFIG_SECURITY is off");
#endif
}

/**
 * struct member - where a member of struct cred is
 * @name: its name
 * @off: offsetof()
 * @size: sizeof()
 * @align: its alignment
 */
struct member {
	const char *name;
	size_t off, size, align;
};

/* m is a member of struct cred, of type type */
#define MEMBER(m, type) { #m, offsetof(struct cred, m), sizeof(type), __alignof__(type) }

/* Every member of struct cred in 6.1, compared or not. */
static const struct member cred_members[] = {
	MEMBER(usage, atomic_long_t),
#ifdef CONFIG_DEBUG_CREDENTIALS
	MEMBER(subscribers, atomic_t), MEMBER(put_addr, void *), MEMBER(magic, unsigned int),
#endif
	MEMBER(uid, kuid_t), MEMBER(gid, kgid_t), MEMBER(suid, kuid_t), MEMBER(sgid, kgid_t),
	MEMBER(euid, kuid_t), MEMBER(egid, kgid_t), MEMBER(fsuid, kuid_t), MEMBER(fsgid, kgid_t),
	MEMBER(securebits, unsigned int),
	MEMBER(cap_inheritable, kernel_cap_t), MEMBER(cap_permitted, kernel_cap_t),
	MEMBER(cap_effective, kernel_cap_t), MEMBER(cap_bset, kernel_cap_t),
	MEMBER(cap_ambient, kernel_cap_t),
#ifdef CONFIG_KEYS
	MEMBER(jit_keyring, unsigned char), MEMBER(session_keyring, struct key *),
	MEMBER(process_keyring, struct key *), MEMBER(thread_keyring, struct key *),
	MEMBER(request_key_auth, struct key *),
#endif
#ifdef CONFIG_SECURITY
	MEMBER(security, void *),
#endif
	MEMBER(user, struct user_struct *), MEMBER(user_ns, struct user_namespace *),
	MEMBER(ucounts, struct ucounts *), MEMBER(group_info, struct group_info *),
	MEMBER(rcu, struct rcu_head),	/* in a union with int non_rcu */
};

/* Not compared: the reference counts, debugging and freeing. */
static const char *const not_compared[] = {
	"usage", "subscribers", "put_addr", "magic", "rcu",
};

static bool in_field_cases(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(field_cases); i++)
		if (!strcmp(field_cases[i].member, name))
			return true;
	return false;
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

/*
 * Each member is either made to differ by a case above or not compared on
 * purpose; and the members listed make up the whole struct, each where the
 * C layout rules put it after the one before (a member this suite does not
 * know would leave a hole; one small enough to fit in padding would not).
 */
static void every_member_is_known(struct kunit *test)
{
	struct member m[ARRAY_SIZE(cred_members)];
	size_t i, j, pos = 0;

	for (i = 0; i < ARRAY_SIZE(cred_members); i++) {
		const char *name = cred_members[i].name;
		bool cmp = in_field_cases(name);
		bool skip = in_list(name, not_compared, ARRAY_SIZE(not_compared));

		KUNIT_EXPECT_TRUE_MSG(test, cmp != skip,
				      "member %s: %s", name, cmp ? "compared and excluded" :
				      "neither compared nor excluded");
	}
	for (i = 0; i < ARRAY_SIZE(field_cases); i++) {
		bool known = !field_cases[i].member[0];

		for (j = 0; j < ARRAY_SIZE(cred_members); j++)
			known |= !strcmp(field_cases[i].member, cred_members[j].name);
		KUNIT_EXPECT_TRUE_MSG(test, known, "case %s: no member %s",
				      field_cases[i].desc, field_cases[i].member);
	}

	/* by offset (struct cred is __randomize_layout) */
	memcpy(m, cred_members, sizeof(m));
	for (i = 1; i < ARRAY_SIZE(m); i++)
		for (j = i; j > 0 && m[j - 1].off > m[j].off; j--)
			swap(m[j - 1], m[j]);
	for (i = 0; i < ARRAY_SIZE(m); i++) {
		KUNIT_EXPECT_EQ_MSG(test, m[i].off, ALIGN(pos, m[i].align),
				    "struct cred: unknown bytes before %s", m[i].name);
		pos = m[i].off + m[i].size;
	}
	KUNIT_EXPECT_EQ_MSG(test, sizeof(struct cred), ALIGN(pos, __alignof__(struct cred)),
			    "struct cred: unknown bytes at the end");
}

static struct kunit_case ibckpt_creds_cases[] = {
	KUNIT_CASE_PARAM(one_field_differs, field_gen_params),
	KUNIT_CASE(same_object),
	KUNIT_CASE(equal_contents),
	KUNIT_CASE(group_info_same_object),
	KUNIT_CASE(group_info_same_content),
	KUNIT_CASE(group_info_different_content),
	KUNIT_CASE(thread_keyrings),
	KUNIT_CASE(lsm_blobs),
	KUNIT_CASE(every_member_is_known),
	{}
};

static struct kunit_suite ibckpt_creds_suite = {
	.name = "ibckpt_creds",
	.test_cases = ibckpt_creds_cases,
};

kunit_test_suite(ibckpt_creds_suite);
