package dev.nupa.transport;

import java.util.function.Consumer;

import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandle;
import io.netty.channel.IoRegistration;

/**
 * A channel's side of the {@link NupaIoHandler}. No I/O events arrive through it: the stack calls
 * its channels directly. It is how the loop registers a channel (its registration's attachment is
 * the node's {@link FabricStack}) and closes it when the loop shuts down.
 */
interface NupaIoHandle extends IoHandle {
    /** Closes the channel now (the event loop is going away). */
    void closeNow();

    @Override
    default void handle(IoRegistration registration, IoEvent ioEvent) {
        // Nothing arrives this way: the stack calls the channel directly.
    }

    @Override
    default void close() {
        closeNow();
    }

    /** Whether {@code loop} is a NUPA event loop that takes handles of {@code type}. */
    static boolean compatible(EventLoop loop, Class<? extends NupaIoHandle> type) {
        return loop instanceof IoEventLoop l && l.isCompatible(type);
    }

    /** Cancels {@code registration} if there is one; returns null, the channel's registration from then on. */
    static IoRegistration cancel(IoRegistration registration) {
        if (registration != null) {
            registration.cancel();
        }
        return null;
    }

    /** Registers {@code handle} with its channel's event loop; {@code registered} gets the registration, then the promise succeeds. */
    static void register(EventLoop loop, NupaIoHandle handle, ChannelPromise promise, Consumer<IoRegistration> registered) {
        ((IoEventLoop) loop).register(handle).addListener(f -> {
            if (!f.isSuccess()) {
                promise.setFailure(f.cause());
                return;
            }
            try {
                registered.accept((IoRegistration) f.getNow());
            } catch (RuntimeException e) {
                promise.setFailure(e);
                return;
            }
            promise.setSuccess();
        });
    }
}
