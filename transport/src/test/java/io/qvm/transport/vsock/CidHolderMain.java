package io.qvm.transport.vsock;

import java.nio.file.Path;

/** Child process for {@link VsockTest}: holds one CID until its stdin closes. */
public final class CidHolderMain {
    private CidHolderMain() {
    }

    public static void main(String[] args) throws Exception {
        try (GuestCidAllocator.GuestCid cid = new GuestCidAllocator(Path.of(args[0]), 3, 100).allocate()) {
            System.out.println("held " + cid.cid());
            System.out.flush();
            while (System.in.read() >= 0) {
                // wait for the parent to close our stdin
            }
        }
    }
}
