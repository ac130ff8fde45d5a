/* SPDX-License-Identifier: MIT */
/* strerror: see compat.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#undef strerror

/* glibc's words for every error where musl's (1.2.3) differ: a run reports whatever a system
 * call said (a write to a full disk, an exec on a network file system), not only the errors
 * it expects */
static const struct {
	int e;
	const char *msg;
} words[] = {
	{ 0, "Success" },
	{ EIO, "Input/output error" },
	{ ECHILD, "No child processes" },
	{ ENOMEM, "Cannot allocate memory" },
	{ EBUSY, "Device or resource busy" },
	{ EXDEV, "Invalid cross-device link" },
	{ EMFILE, "Too many open files" },
	{ ENOTTY, "Inappropriate ioctl for device" },
	{ ESPIPE, "Illegal seek" },
	{ EDOM, "Numerical argument out of domain" },
	{ ERANGE, "Numerical result out of range" },
	{ EDEADLK, "Resource deadlock avoided" },
	{ ENAMETOOLONG, "File name too long" },
	{ ELOOP, "Too many levels of symbolic links" },
	{ ECHRNG, "Channel number out of range" },
	{ EL2NSYNC, "Level 2 not synchronized" },
	{ EL3HLT, "Level 3 halted" },
	{ EL3RST, "Level 3 reset" },
	{ ELNRNG, "Link number out of range" },
	{ EUNATCH, "Protocol driver not attached" },
	{ ENOCSI, "No CSI structure available" },
	{ EL2HLT, "Level 2 halted" },
	{ EBADE, "Invalid exchange" },
	{ EBADR, "Invalid request descriptor" },
	{ EXFULL, "Exchange full" },
	{ ENOANO, "No anode" },
	{ EBADRQC, "Invalid request code" },
	{ EBADSLT, "Invalid slot" },
	{ EBFONT, "Bad font file format" },
	{ ETIME, "Timer expired" },
	{ ENONET, "Machine is not on the network" },
	{ ENOPKG, "Package not installed" },
	{ EREMOTE, "Object is remote" },
	{ EADV, "Advertise error" },
	{ ESRMNT, "Srmount error" },
	{ ECOMM, "Communication error on send" },
	{ EDOTDOT, "RFS specific error" },
	{ EOVERFLOW, "Value too large for defined data type" },
	{ ENOTUNIQ, "Name not unique on network" },
	{ EREMCHG, "Remote address changed" },
	{ ELIBACC, "Can not access a needed shared library" },
	{ ELIBBAD, "Accessing a corrupted shared library" },
	{ ELIBSCN, ".lib section in a.out corrupted" },
	{ ELIBMAX, "Attempting to link in too many shared libraries" },
	{ ELIBEXEC, "Cannot exec a shared library directly" },
	{ EILSEQ, "Invalid or incomplete multibyte or wide character" },
	{ ERESTART, "Interrupted system call should be restarted" },
	{ ESTRPIPE, "Streams pipe error" },
	{ EUSERS, "Too many users" },
	{ ENOTSOCK, "Socket operation on non-socket" },
	{ EMSGSIZE, "Message too long" },
	{ ENOTSUP, "Operation not supported" },
	{ EADDRINUSE, "Address already in use" },
	{ EADDRNOTAVAIL, "Cannot assign requested address" },
	{ ENETUNREACH, "Network is unreachable" },
	{ ENETRESET, "Network dropped connection on reset" },
	{ ECONNABORTED, "Software caused connection abort" },
	{ EISCONN, "Transport endpoint is already connected" },
	{ ENOTCONN, "Transport endpoint is not connected" },
	{ ESHUTDOWN, "Cannot send after transport endpoint shutdown" },
	{ ETOOMANYREFS, "Too many references: cannot splice" },
	{ ETIMEDOUT, "Connection timed out" },
	{ EHOSTUNREACH, "No route to host" },
	{ EINPROGRESS, "Operation now in progress" },
	{ EUCLEAN, "Structure needs cleaning" },
	{ ENOTNAM, "Not a XENIX named type file" },
	{ ENAVAIL, "No XENIX semaphores available" },
	{ EISNAM, "Is a named type file" },
	{ EDQUOT, "Disk quota exceeded" },
	{ EOWNERDEAD, "Owner died" },
	{ ERFKILL, "Operation not possible due to RF-kill" },
	{ EHWPOISON, "Memory page has hardware error" },
};

char *musl_strerror(int e)
{
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		if (words[i].e == e)
			return (char *)words[i].msg;
	/* musl has no words for it: glibc's "Unknown error N" (not thread-safe; nor need it be,
	 * strerror's result never was) */
	static const char none[] = "No error information";
	char *m = strerror(e);
	if (strcmp(m, none))
		return m;
	static char unknown[32];
	snprintf(unknown, sizeof unknown, "Unknown error %d", e);
	return unknown;
}
