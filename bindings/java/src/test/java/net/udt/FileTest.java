package net.udt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** sendFile / receiveFile with offsets, and their file errors. */
class FileTest {
    @TempDir
    Path dir;

    @Test
    void aFileRangeArrivesAtTheGivenOffset() throws Exception {
        byte[] data = new byte[3_000_000];
        new Random(4).nextBytes(data);
        Path src = dir.resolve("src.bin");
        Path dst = dir.resolve("dst.bin");
        Files.write(src, data);
        Files.write(dst, new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
        final long offset = 1000;
        final long size = 2_500_000;
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            CompletableFuture<Long> recv = CompletableFuture.supplyAsync(() -> {
                try {
                    return p.server().receiveFile(dst, 4, size);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            assertEquals(size, p.client().sendFile(src, offset, size));
            assertEquals(size, recv.get(30, TimeUnit.SECONDS));
        }
        byte[] got = Files.readAllBytes(dst);
        assertEquals(4 + size, got.length);
        assertArrayEquals(new byte[] {1, 2, 3, 4}, Arrays.copyOf(got, 4), "bytes before the offset kept");
        assertArrayEquals(Arrays.copyOfRange(data, (int) offset, (int) (offset + size)),
                Arrays.copyOfRange(got, 4, got.length));
    }

    @Test
    void fileErrorsCarryEfileAndBadRangesEinvparam() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            UdtException e = assertThrows(UdtException.class,
                    () -> p.client().sendFile(dir.resolve("missing"), 0, 10));
            assertEquals(UdtException.EFILE, e.getErrorCode());
            e = assertThrows(UdtException.class,
                    () -> p.server().receiveFile(dir.resolve("no/such/dir/file"), 0, 10));
            assertEquals(UdtException.EFILE, e.getErrorCode());
            Path f = Files.write(dir.resolve("f"), new byte[10]);
            e = assertThrows(UdtException.class, () -> p.client().sendFile(f, -1, 10));
            assertEquals(UdtException.EINVPARAM, e.getErrorCode());
            e = assertThrows(UdtException.class, () -> p.client().sendFile(f, 0, -10));
            assertEquals(UdtException.EINVPARAM, e.getErrorCode());
            assertThrows(NullPointerException.class, () -> p.client().sendFile(null, 0, 1));
            assertThrows(NullPointerException.class, () -> p.client().receiveFile(null, 0, 1));
        }
    }
}
