/*
 * ccc.h: UDT4 4.11's Composable UDT interface (CCC, CCCFactory) for the drop-in. An algorithm
 * written for UDT4 as a CCC subclass compiles unchanged and runs in udt's engine through
 * UDT::setsockopt(u, 0, UDT_CC, new CCCFactory<T>, sizeof(CCCFactory<T>)).
 *
 * The measurement members (m_iMSS, m_iRTT, m_iRcvRate, m_iBandwidth, m_dMaxCWndSize,
 * m_iSndCurrSeqNo) are refreshed from the connection before every callback; the two controls
 * (m_dCWndSize, m_dPktSndPeriod) belong to the algorithm and are read after every callback,
 * as in UDT4 (so values set in a constructor, or by the application between callbacks, hold).
 */
#ifndef UDT_DROPIN_CCC_H
#define UDT_DROPIN_CCC_H

#include "packet.h"
#include "udt.h"

struct udt_dropin_cc_bridge;

class UDT_API CCC {
    friend struct udt_dropin_cc_bridge;

public:
    CCC();
    virtual ~CCC();

private:
    CCC(const CCC&);
    CCC& operator=(const CCC&) { return *this; }

public:
    /* The connection is set up. */
    virtual void init() {}
    /* The connection is closing. */
    virtual void close() {}
    /* An ACK acknowledged every packet before this sequence number. */
    virtual void onACK(int32_t) {}
    /* A NAK reported losses (UDT4's loss list: a range's first number has the top bit set). */
    virtual void onLoss(const int32_t*, int) {}
    /* The retransmission timer expired. */
    virtual void onTimeout() {}
    /* A data packet is about to be sent. */
    virtual void onPktSent(const CPacket*) {}
    /* A data packet arrived. */
    virtual void onPktReceived(const CPacket*) {}
    /* A custom control message arrived. */
    virtual void processCustomMsg(const CPacket*) {}

protected:
    /* Period of the receiver's ACK timer, ms (capped at 10 ms). */
    void setACKTimer(int msINT);
    /* Also ACK every this many packets. */
    void setACKInterval(int pktINT);
    /* A fixed retransmission timeout, µs. */
    void setRTO(int usRTO);
    /* Sends a custom control message (built with CPacket::pack(0x7FFF, ...)) to the peer. */
    void sendCustomMsg(CPacket& pkt) const;
    /* The connection's statistics (valid during a callback). */
    const CPerfMon* getPerfInfo();
    /* Stores a parameter the algorithm may read (m_pcParam, m_iPSize). */
    void setUserParam(const char* param, int size);

protected:
    const int32_t& m_iSYNInterval; /* SYN, µs (10000) */
    double m_dPktSndPeriod;        /* time between packets, µs */
    double m_dCWndSize;            /* congestion window, packets */
    int m_iBandwidth;              /* estimated capacity, packets per second */
    double m_dMaxCWndSize;         /* the peer's flow window, packets */
    int m_iMSS;                    /* segment size, bytes with headers */
    int32_t m_iSndCurrSeqNo;       /* largest sequence number sent */
    int m_iRcvRate;                /* arrival rate at the receiver, packets per second */
    int m_iRTT;                    /* RTT, µs */
    char* m_pcParam;               /* user parameter (setUserParam) */
    int m_iPSize;                  /* its size, bytes */

private:
    void* m_pCtx;        /* the running callback's context, NULL between callbacks */
    int m_iACKPeriod;    /* pending setACKTimer, ms (-1: none) */
    int m_iACKInterval;  /* pending setACKInterval (-1: none) */
    int m_iRTO;          /* pending setRTO, µs (-1: none) */
    CPerfMon m_PerfInfo;
};

/* Makes CCC instances: UDT_CC takes one (the library keeps a clone()). */
class CCCVirtualFactory {
public:
    virtual ~CCCVirtualFactory() {}
    virtual CCC* create() = 0;
    virtual CCCVirtualFactory* clone() = 0;
};

/* The factory of algorithm T. */
template <class T>
class CCCFactory : public CCCVirtualFactory {
public:
    virtual ~CCCFactory() {}
    virtual CCC* create() { return new T; }
    virtual CCCVirtualFactory* clone() { return new CCCFactory<T>; }
};

#endif /* UDT_DROPIN_CCC_H */
