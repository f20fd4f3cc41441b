package net.udt;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the native library from inside the jar, so that a user needs the jar and nothing
 * else. The library sits at {@code /net/udt/native/<platform>/<file>}, e.g.
 * {@code /net/udt/native/linux-x86_64/libudt_java.so}; it is copied to a temporary file
 * (a shared object cannot be loaded from inside a jar) and loaded from there. The system
 * property {@code net.udt.library} names a library file to load instead (for development,
 * or a platform the jar does not carry).
 */
final class NativeLoader {
    /** Base name of the library; {@link System#mapLibraryName} adds the platform's affixes. */
    static final String LIBRARY = "udt_java";

    private NativeLoader() {}

    /** The platform's directory name in the jar, {@code <os>-<arch>}. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.startsWith("linux") ? "linux"
                : os.startsWith("mac") ? "macos"
                : os.startsWith("windows") ? "windows"
                : os.replaceAll("[^a-z0-9]", "");
        String a = switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch.replaceAll("[^a-z0-9_]", "");
        };
        return o + "-" + a;
    }

    static void load() {
        String explicit = System.getProperty("net.udt.library");
        if (explicit != null && !explicit.isEmpty()) {
            System.load(Path.of(explicit).toAbsolutePath().toString());
            return;
        }
        String file = System.mapLibraryName(LIBRARY);
        String resource = "/net/udt/native/" + platform() + "/" + file;
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("udt: no native library for platform " + platform()
                        + " in this jar (looked for " + resource + "; set -Dnet.udt.library=FILE"
                        + " to load one built for it)");
            }
            Path tmp = Files.createTempFile("udt_java-", "-" + file);
            try {
                Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                System.load(tmp.toAbsolutePath().toString());
            } finally {
                // Loaded code stays mapped after the file is gone (Linux, macOS); systems that
                // lock a loaded library remove it at exit instead.
                try {
                    Files.delete(tmp);
                } catch (IOException e) {
                    tmp.toFile().deleteOnExit();
                }
            }
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("udt: cannot extract " + resource + ": " + e);
            err.initCause(e);
            throw err;
        }
    }
}
