/* SPDX-License-Identifier: MIT */
/* clone3: see clone3.h. */
#define _GNU_SOURCE
#include "clone3.h"

#include <errno.h>

#ifdef CLONE3_RUN
/* The child cannot return from the system call when it runs on our stack (the frame is
 * ours), so the call is made here, where its first steps are to leave our red zone alone and
 * call fn; on a stack of its own the same steps cost it 128 bytes. */
long clone3_run(struct clone_args *a, int (*fn)(void *), void *arg)
{
	register int (*f)(void *) __asm__("r12") = fn;
	register void *x __asm__("r13") = arg;
	long r;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "sub $128, %%rsp\n\t" /* the child: below our red zone */
			 "and $-16, %%rsp\n\t"
			 "xor %%ebp, %%ebp\n\t" /* no frame above fn's */
			 "mov %%r13, %%rdi\n\t"
			 "call *%%r12\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov %[exit], %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(r)
			 : "0"((long)SYS_clone3), "D"(a), "S"(sizeof *a), "r"(f), "r"(x), [exit] "i"(SYS_exit_group)
			 : "rcx", "r11", "memory");
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}
#else
long clone3_run(struct clone_args *a, int (*fn)(void *), void *arg)
{
	(void)a;
	(void)fn;
	(void)arg;
	errno = ENOSYS;
	return -1;
}
#endif
