// Shared between the drop-in's source files; not installed. Include after udt.h and after
// udt_c.h in namespace cabi.
#ifndef UDT_DROPIN_INTERNAL_H
#define UDT_DROPIN_INTERNAL_H

namespace udt_dropin {

// Records an error of the drop-in itself as the thread's last error.
inline void set_local_error(int code, const char* what) { cabi::udt_setlasterror(code, what); }

// UDT_CC: installs a copy of the CCCVirtualFactory at `optval` on socket `u` (ccc.cpp).
int set_cc(UDTSOCKET u, const void* optval, int optlen);

// UDT_CC read back (ccc.cpp).
int get_cc(UDTSOCKET u, void* optval, int* optlen);

// Copies the C statistics into UDT4's struct (same fields, same order).
void copy_perf(const cabi::udt_traceinfo& t, CPerfMon* p);

}  // namespace udt_dropin

#endif
