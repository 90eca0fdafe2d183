/* check.h - a tiny unit-test harness shared by the tests of every room.
 *
 *   TEST(add_works) { CHECK_EQ_INT(1 + 1, 2); }
 *   int main(void) { RUN(add_works); return check_report(); }
 *
 * Every CHECK* counts as one check and evaluates to its truth value, so a
 * test can stop early when it must: if (!CHECK(p != NULL)) return;
 * A failing check prints one line, file:line, the test and the values, to
 * stderr, and the test goes on. check_report() prints exactly one line to
 * stdout, "N passed, M failed", and returns nonzero when M > 0.
 * Include it in one translation unit per test executable (the counters are
 * static). */
#ifndef GWR_TEST_CHECK_H
#define GWR_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static long check_npassed_, check_nfailed_;
static const char *check_test_ = "?";

static inline int check_count_(int ok, const char *file, int line) {
    if (ok) {
        check_npassed_++;
    } else {
        check_nfailed_++;
        fprintf(stderr, "%s:%d: [%s] ", file, line, check_test_);
    }
    return ok; /* the caller prints the rest of the line when !ok */
}

static inline int check_true_(int ok, const char *file, int line, const char *expr) {
    if (!check_count_(ok, file, line))
        fprintf(stderr, "CHECK(%s) failed\n", expr);
    return ok;
}

static inline int check_eq_int_(long long a, long long b, const char *file, int line,
                                const char *ea, const char *eb) {
    if (!check_count_(a == b, file, line))
        fprintf(stderr, "%s == %s failed: %lld != %lld\n", ea, eb, a, b);
    return a == b;
}

static inline int check_str_(const char *a, const char *b, const char *file, int line,
                             const char *ea) {
    int ok = (a && b) ? strcmp(a, b) == 0 : a == b;
    if (!check_count_(ok, file, line))
        fprintf(stderr, "%s is \"%s\", expected \"%s\"\n", ea, a ? a : "(null)", b ? b : "(null)");
    return ok;
}

static inline int check_contains_(const char *hay, const char *needle, const char *file, int line,
                                  const char *eh) {
    int ok = hay && needle && strstr(hay, needle) != NULL;
    if (!check_count_(ok, file, line))
        fprintf(stderr, "%s is \"%s\", which lacks \"%s\"\n", eh, hay ? hay : "(null)",
                needle ? needle : "(null)");
    return ok;
}

static inline int check_report(void) {
    printf("%ld passed, %ld failed\n", check_npassed_, check_nfailed_);
    fflush(stdout);
    return check_nfailed_ > 0;
}

#define CHECK(cond) check_true_(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_EQ_INT(a, b) check_eq_int_((long long)(a), (long long)(b), __FILE__, __LINE__, #a, #b)
/* NULL equals only NULL. */
#define CHECK_STR(a, b) check_str_((a), (b), __FILE__, __LINE__, #a)
/* Status codes are enums whose success value is 0 (GWR_OK). */
#define CHECK_OK(status) check_eq_int_((long long)(status), 0LL, __FILE__, __LINE__, #status, "OK")
/* hay contains the substring needle (e.g. an error message names an op). */
#define CHECK_CONTAINS(hay, needle) check_contains_((hay), (needle), __FILE__, __LINE__, #hay)

/* TEST(fn) defines static void fn(void); RUN(fn) runs it under its name. */
#define TEST(fn) static void fn(void)
#define RUN(fn) (check_test_ = #fn, fn())

#endif
