package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.junit.jupiter.api.Test;

/** The jar carries the library for this platform under the documented path. */
class NativeLoaderTest {
    @Test
    void thisPlatformsLibraryIsPacked() {
        String os = System.getProperty("os.name");
        String arch = System.getProperty("os.arch");
        if (os.startsWith("Linux") && arch.equals("amd64")) {
            assertEquals("linux-x86_64", NativeLoader.platform());
        }
        String resource = "/net/udt/native/" + NativeLoader.platform() + "/" + System.mapLibraryName("udt_java");
        assertNotNull(NativeLoader.class.getResource(resource), resource);
    }
}
