// libpq's public header. pkg-config (libpq) adds -I/usr/include/postgresql;
// the fallback path covers machines without pkg-config metadata.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
