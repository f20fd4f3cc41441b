"""Transport encryption through the socket options UDT_SECRET, UDT_ENCRYPTION and
UDT_ENCRYPTED (docs/encryption.md): a byte-exact encrypted transfer, and the refusals."""

import pytest

import udt
from conftest import LIMIT, connected_pair


def with_secret(secret, mode=2):
    def setup(s):
        s.setsockopt(udt.UDT_ENCRYPTION, mode)
        if secret is not None:
            s.setsockopt(udt.UDT_SECRET, secret)
    return setup


def test_option_numbers_and_values():
    assert (udt.UDT_SECRET, udt.UDT_ENCRYPTION, udt.UDT_ENCRYPTED) == (100, 101, 102)
    s = udt.socket()
    assert s.getsockopt(udt.UDT_ENCRYPTION) == 0
    s.setsockopt(udt.UDT_SECRET, "a str secret")
    assert s.getsockopt(udt.UDT_ENCRYPTION) == 2  # required by default
    s.setsockopt(0, udt.UDT_ENCRYPTION, 1)  # (level, optname, value) form too
    assert s.getsockopt(udt.UDT_ENCRYPTION) == 1
    with pytest.raises(udt.error) as e:
        s.setsockopt(udt.UDT_ENCRYPTION, 7)
    assert e.value.errno == 5003
    with pytest.raises(udt.error) as e:
        s.setsockopt(udt.UDT_SECRET, 12)
    assert e.value.errno == 5003
    with pytest.raises(udt.error):
        s.getsockopt(udt.UDT_SECRET)  # write only
    with pytest.raises(udt.error):
        s.setsockopt(udt.UDT_ENCRYPTED, 1)  # read only
    s.setsockopt(udt.UDT_SECRET, b"")
    assert s.getsockopt(udt.UDT_ENCRYPTION) == 0
    s.close()


def test_encrypted_transfer_is_byte_exact():
    client, conn, listener = connected_pair(setup=with_secret(b"py secret"))
    try:
        assert client.getsockopt(udt.UDT_ENCRYPTED) == 1
        assert conn.getsockopt(udt.UDT_ENCRYPTED) == 1
        data = bytes(i % 251 for i in range(2_000_000))
        client.sendall(data)
        got = bytearray()
        while len(got) < len(data):
            got += conn.recv(1 << 16)
        assert bytes(got) == data
        assert conn.perfmon().pktRecvTotal > 1000
    finally:
        for s in (client, conn, listener):
            s.close()


def refused(listener_setup, client_setup):
    with udt.socket() as listener:
        listener_setup(listener)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with udt.socket() as c:
            client_setup(c)
            c.settimeout(LIMIT)
            with pytest.raises(udt.error) as e:
                c.connect(listener.getsockname())
            return e.value.errno


def test_wrong_secret_and_mismatched_requirements_are_refused():
    # Another secret: a failed security check (UDT4 1004).
    assert refused(with_secret(b"one"), with_secret(b"two")) == 1004
    # A clear client and a listener that requires encryption: rejected (1002).
    assert refused(with_secret(b"one"), lambda s: None) == 1002
    # A client that requires encryption and a clear listener (as UDT4 4.11 is): refused.
    assert refused(lambda s: None, with_secret(b"one")) == 1002


def test_preferred_falls_back_to_clear_with_a_clear_listener():
    client, conn, listener = connected_pair(setup=None)
    client.close(), conn.close()
    c = udt.socket()
    with_secret(b"k", mode=1)(c)
    c.settimeout(LIMIT)
    c.connect(listener.getsockname())
    s, _ = listener.accept()
    assert c.getsockopt(udt.UDT_ENCRYPTED) == 0 and s.getsockopt(udt.UDT_ENCRYPTED) == 0
    c.sendall(b"clear")
    assert s.recv(10) == b"clear"
    for x in (c, s, listener):
        x.close()
