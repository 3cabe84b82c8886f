package dev.nupa.transport;

import io.netty.channel.IoHandle;

/** A channel's side of the {@link NupaIoHandler}: told when the loop shuts down under it. */
interface NupaIoHandle extends IoHandle {
    /** Closes the channel now (the event loop is going away). */
    void closeNow();
}
