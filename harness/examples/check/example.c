/* SPDX-License-Identifier: MIT */
/* A tiny Check suite that leaks on purpose: run it with `make example-check`.
 * leaves_a_daemon detaches a `sleep` and forgets it; reaper_check_tcase() makes that test
 * fail with the process listed, kills it, and lets the clean test pass. */
#include <reaper/check.h>
#include <stdlib.h>

START_TEST(leaves_a_daemon)
{
	ck_assert_int_eq(system("setsid -f sleep 300"), 0);
}
END_TEST

START_TEST(cleans_up)
{
	ck_assert_int_eq(system("sleep 0.1"), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("example");
	TCase *tc = tcase_create("example");
	reaper_check_tcase(tc, "example"); /* the one line that adds the leak check */
	tcase_add_test(tc, leaves_a_daemon);
	tcase_add_test(tc, cleans_up);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
