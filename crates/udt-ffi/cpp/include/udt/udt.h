/*
 * udt.h: UDT4 4.11's C++ API, implemented by udt (a Rust engine) through its C ABI.
 *
 * An application written against UDT4's <udt.h> (or <udt/udt.h>) compiles against this
 * header unchanged and links with `pkg-config --libs udt4` instead of `-ludt`. The names,
 * types, defaults and numbers below are UDT4's; the implementation (libudt.so here) is a thin
 * layer over udt_c.h. See crates/udt-ffi/README.md.
 */
#ifndef UDT_DROPIN_UDT_H
#define UDT_DROPIN_UDT_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#define UDT_API __attribute__((visibility("default")))

/* UDT4 defines this to say its waits sleep rather than spin; ours do too. */
#define NO_BUSY_WAITING

/* A system (kernel) socket descriptor. */
typedef int SYSSOCKET;
/* The UDP socket handed to UDT::bind2. */
typedef SYSSOCKET UDPSOCKET;
/* A UDT socket handle. */
typedef int UDTSOCKET;

/* The socket sets of UDT::select. */
typedef std::set<UDTSOCKET> ud_set;
#define UD_CLR(u, uset) ((uset)->erase(u))
#define UD_ISSET(u, uset) ((uset)->find(u) != (uset)->end())
#define UD_SET(u, uset) ((uset)->insert(u))
#define UD_ZERO(uset) ((uset)->clear())

/* Event bits of the epoll calls. */
enum EPOLLOpt {
    UDT_EPOLL_IN = 0x1,  /* readable, or a connection to accept */
    UDT_EPOLL_OUT = 0x4, /* writable, or connected */
    UDT_EPOLL_ERR = 0x8  /* broken or closed */
};

/* Socket states (UDT::getsockstate). */
enum UDTSTATUS { INIT = 1, OPENED, LISTENING, CONNECTING, CONNECTED, BROKEN, CLOSING, CLOSED, NONEXIST };

/* Socket options (UDT::setsockopt / UDT::getsockopt); value types as in UDT4. */
enum UDTOpt {
    UDT_MSS,        /* int: maximum segment size, bytes */
    UDT_SNDSYN,     /* bool: blocking sends */
    UDT_RCVSYN,     /* bool: blocking receives, accept and connect */
    UDT_CC,         /* CCCVirtualFactory*: congestion control (see ccc.h) */
    UDT_FC,         /* int: flight flag size, packets */
    UDT_SNDBUF,     /* int: send buffer, bytes */
    UDT_RCVBUF,     /* int: receive buffer, bytes */
    UDT_LINGER,     /* struct linger: linger on close */
    UDP_SNDBUF,     /* int: kernel UDP send buffer, bytes */
    UDP_RCVBUF,     /* int: kernel UDP receive buffer, bytes */
    UDT_MAXMSG,     /* not implemented (as in UDT4) */
    UDT_MSGTTL,     /* not implemented (as in UDT4) */
    UDT_RENDEZVOUS, /* bool: rendezvous connect */
    UDT_SNDTIMEO,   /* int: send timeout, ms */
    UDT_RCVTIMEO,   /* int: receive timeout, ms */
    UDT_REUSEADDR,  /* bool: share the UDP port */
    UDT_MAXBW,      /* int64_t: rate limit, bytes per second (-1: none) */
    UDT_STATE,      /* int32_t, read only: UDTSTATUS */
    UDT_EVENT,      /* int32_t, read only: EPOLLOpt bits */
    UDT_SNDDATA,    /* int32_t, read only: packets in the send buffer */
    UDT_RCVDATA     /* int32_t, read only: bytes in the receive buffer */
};

/* Performance statistics (UDT::perfmon). "Total" fields count since the connection began,
   the others since the last perfmon with clear = true. */
struct CPerfMon {
    int64_t msTimeStamp;       /* ms since the socket was opened */
    int64_t pktSentTotal;      /* data packets sent, with retransmissions */
    int64_t pktRecvTotal;      /* data packets received */
    int pktSndLossTotal;       /* packets the sender learned were lost */
    int pktRcvLossTotal;       /* packets the receiver found missing */
    int pktRetransTotal;       /* retransmissions */
    int pktSentACKTotal;       /* ACKs sent */
    int pktRecvACKTotal;       /* ACKs received */
    int pktSentNAKTotal;       /* NAKs sent */
    int pktRecvNAKTotal;       /* NAKs received */
    int64_t usSndDurationTotal; /* µs with data to send */
    int64_t pktSent;
    int64_t pktRecv;
    int pktSndLoss;
    int pktRcvLoss;
    int pktRetrans;
    int pktSentACK;
    int pktRecvACK;
    int pktSentNAK;
    int pktRecvNAK;
    double mbpsSendRate;       /* Mb/s */
    double mbpsRecvRate;       /* Mb/s */
    int64_t usSndDuration;     /* µs with data to send */
    double usPktSndPeriod;     /* µs between packets */
    int pktFlowWindow;         /* packets */
    int pktCongestionWindow;   /* packets */
    int pktFlightSize;         /* packets in flight */
    double msRTT;              /* ms */
    double mbpsBandwidth;      /* estimated capacity, Mb/s */
    int byteAvailSndBuf;       /* free send buffer, bytes */
    int byteAvailRcvBuf;       /* free receive buffer, bytes */
};

/* An error: UDT4's code is major * 1000 + minor. UDT::getlasterror() returns the calling
   thread's last one. */
class UDT_API CUDTException {
public:
    CUDTException(int major = 0, int minor = 0, int err = -1);
    CUDTException(const CUDTException& e);
    CUDTException& operator=(const CUDTException& e);
    virtual ~CUDTException();

    /* A description of the error. */
    virtual const char* getErrorMessage();
    /* major * 1000 + minor (0 = success, -1 = unknown). */
    virtual int getErrorCode() const;
    /* Resets to success. */
    virtual void clear();

    /* For the drop-in's own use: an error with this code, errno and description. */
    static CUDTException fromCode(int code, int err, const char* desc);

private:
    int m_iMajor;
    int m_iMinor;
    int m_iErrno;
    std::string m_strMsg;

public:
    static const int SUCCESS;
    static const int ECONNSETUP;
    static const int ENOSERVER;
    static const int ECONNREJ;
    static const int ESOCKFAIL;
    static const int ESECFAIL;
    static const int ECONNFAIL;
    static const int ECONNLOST;
    static const int ENOCONN;
    static const int ERESOURCE;
    static const int ETHREAD;
    static const int ENOBUF;
    static const int EFILE;
    static const int EINVRDOFF;
    static const int ERDPERM;
    static const int EINVWROFF;
    static const int EWRPERM;
    static const int EINVOP;
    static const int EBOUNDSOCK;
    static const int ECONNSOCK;
    static const int EINVPARAM;
    static const int EINVSOCK;
    static const int EUNBOUNDSOCK;
    static const int ENOLISTEN;
    static const int ERDVNOSERV;
    static const int ERDVUNBOUND;
    static const int ESTREAMILL;
    static const int EDGRAMILL;
    static const int EDUPLISTEN;
    static const int ELARGEMSG;
    static const int EINVPOLLID;
    static const int EASYNCFAIL;
    static const int EASYNCSND;
    static const int EASYNCRCV;
    static const int ETIMEOUT;
    static const int EPEERERR;
    static const int EUNKNOWN;
};

namespace UDT {

typedef CUDTException ERRORINFO;
typedef UDTOpt SOCKOPT;
typedef CPerfMon TRACEINFO;
typedef ud_set UDSET;

/* What UDT::socket and UDT::accept return on failure. */
UDT_API extern const UDTSOCKET INVALID_SOCK;
#undef ERROR
/* What the other calls return on failure. */
UDT_API extern const int ERROR;

UDT_API int startup();
UDT_API int cleanup();
UDT_API UDTSOCKET socket(int af, int type, int protocol);
UDT_API int bind(UDTSOCKET u, const struct sockaddr* name, int namelen);
UDT_API int bind2(UDTSOCKET u, UDPSOCKET udpsock);
UDT_API int listen(UDTSOCKET u, int backlog);
UDT_API UDTSOCKET accept(UDTSOCKET u, struct sockaddr* addr, int* addrlen);
UDT_API int connect(UDTSOCKET u, const struct sockaddr* name, int namelen);
UDT_API int close(UDTSOCKET u);
UDT_API int getpeername(UDTSOCKET u, struct sockaddr* name, int* namelen);
UDT_API int getsockname(UDTSOCKET u, struct sockaddr* name, int* namelen);
UDT_API int getsockopt(UDTSOCKET u, int level, SOCKOPT optname, void* optval, int* optlen);
UDT_API int setsockopt(UDTSOCKET u, int level, SOCKOPT optname, const void* optval, int optlen);
UDT_API int send(UDTSOCKET u, const char* buf, int len, int flags);
UDT_API int recv(UDTSOCKET u, char* buf, int len, int flags);
UDT_API int sendmsg(UDTSOCKET u, const char* buf, int len, int ttl = -1, bool inorder = false);
UDT_API int recvmsg(UDTSOCKET u, char* buf, int len);
UDT_API int64_t sendfile(UDTSOCKET u, std::fstream& ifs, int64_t& offset, int64_t size, int block = 364000);
UDT_API int64_t recvfile(UDTSOCKET u, std::fstream& ofs, int64_t& offset, int64_t size, int block = 7280000);
UDT_API int64_t sendfile2(UDTSOCKET u, const char* path, int64_t* offset, int64_t size, int block = 364000);
UDT_API int64_t recvfile2(UDTSOCKET u, const char* path, int64_t* offset, int64_t size, int block = 7280000);
UDT_API int select(int nfds, UDSET* readfds, UDSET* writefds, UDSET* exceptfds, const struct timeval* timeout);
UDT_API int selectEx(const std::vector<UDTSOCKET>& fds, std::vector<UDTSOCKET>* readfds,
                     std::vector<UDTSOCKET>* writefds, std::vector<UDTSOCKET>* exceptfds, int64_t msTimeOut);
UDT_API int epoll_create();
UDT_API int epoll_add_usock(int eid, UDTSOCKET u, const int* events = NULL);
UDT_API int epoll_add_ssock(int eid, SYSSOCKET s, const int* events = NULL);
UDT_API int epoll_remove_usock(int eid, UDTSOCKET u);
UDT_API int epoll_remove_ssock(int eid, SYSSOCKET s);
UDT_API int epoll_wait(int eid, std::set<UDTSOCKET>* readfds, std::set<UDTSOCKET>* writefds, int64_t msTimeOut,
                       std::set<SYSSOCKET>* lrfds = NULL, std::set<SYSSOCKET>* wrfds = NULL);
UDT_API int epoll_wait2(int eid, UDTSOCKET* readfds, int* rnum, UDTSOCKET* writefds, int* wnum, int64_t msTimeOut,
                        SYSSOCKET* lrfds = NULL, int* lrnum = NULL, SYSSOCKET* lwfds = NULL, int* lwnum = NULL);
UDT_API int epoll_release(int eid);
UDT_API ERRORINFO& getlasterror();
UDT_API int getlasterror_code();
UDT_API const char* getlasterror_desc();
UDT_API int perfmon(UDTSOCKET u, TRACEINFO* perf, bool clear = true);
UDT_API UDTSTATUS getsockstate(UDTSOCKET u);

}  // namespace UDT

#endif /* UDT_DROPIN_UDT_H */
