/*
 * packet.h: the part of UDT4 4.11's CPacket that congestion-control code sees (CCC's
 * onPktSent, onPktReceived, processCustomMsg and sendCustomMsg). The drop-in's packets are
 * views built for those calls, not the wire format (which lives in the Rust engine).
 */
#ifndef UDT_DROPIN_PACKET_H
#define UDT_DROPIN_PACKET_H

#include "udt.h"

class UDT_API CPacket {
public:
    CPacket();
    CPacket(const CPacket& other);
    CPacket& operator=(const CPacket& other);
    ~CPacket();

    /* Sets / reads the payload length, bytes. */
    void setLength(int len);
    int getLength() const;

    /* Builds a control packet: for a custom message (pkttype 0x7FFF = 32767), *lparam is the
       extended type, rparam the body and size its length in bytes. Other types are only
       recorded (the engine builds its own control packets). */
    void pack(int pkttype, void* lparam = NULL, void* rparam = NULL, int size = 0);

    /* 0 for a data packet, 1 for a control packet. */
    int getFlag() const;
    /* Control packet type (0x7FFF for custom messages). */
    int getType() const;
    /* Extended type of a custom message. */
    int getExtendedType() const;
    /* The additional-info word of a control packet. */
    int32_t getAckSeqNo() const;
    /* Message boundary bits of a data packet (2 bits). */
    int getMsgBoundary() const;
    /* In-order flag of a data packet. */
    bool getMsgOrderFlag() const;
    /* Message number of a data packet. */
    int32_t getMsgSeq() const;
    /* A copy the caller deletes. */
    CPacket* clone() const;

    /* Header fields, as UDT4 exposes them. */
    int32_t& m_iSeqNo;
    int32_t& m_iMsgNo;
    int32_t& m_iTimeStamp;
    int32_t& m_iID;
    char*& m_pcData;

    /* Bytes of a UDT header. */
    static const int m_iPktHdrSize;

private:
    int32_t m_nHeader[4];
    char* m_pData;
    int m_iLength;
    bool m_bControl;
    int m_iType;
    int m_iExtType;
    std::vector<char> m_Owned;
};

#endif /* UDT_DROPIN_PACKET_H */
