package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/** ibv_comp_channel: armed queues that fire are returned by getCqEvent in order, once per arming, and acknowledged. */
class CompChannelTest {

    private static void write(RcPair p, QueuePair q) {
        q.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(p.mrA, 0, 8).remote(p.mrB.addr(), p.mrB.rkey()));
        p.fx.pump();
    }

    @Test
    void theQueuesThatFireAreReturnedInOrderOncePerArming() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, fx.node(1), fx.node(2));
            CompChannel ch = p.a.createCompChannel();
            CompletionQueue one = p.a.createCq(16, ch);
            CompletionQueue two = p.a.createCq(16, ch);
            assertSame(ch, one.channel());
            QueuePair q1 = p.qpOn(one);
            QueuePair q2 = p.qpOn(two);

            write(p, q1);
            assertNull(ch.getCqEvent(), "not armed: the completion raises no event");
            one.requestNotify(false);
            two.requestNotify(false);
            write(p, q2);
            write(p, q1);
            assertSame(two, ch.getCqEvent());
            assertSame(one, ch.getCqEvent());
            assertNull(ch.getCqEvent());
            write(p, q1);
            assertNull(ch.getCqEvent(), "fired once: arm it again for the next");
            WorkCompletion wc = new WorkCompletion();
            assertEquals(3, one.poll(new WorkCompletion[] {wc, new WorkCompletion(), new WorkCompletion(), new WorkCompletion()}, 4));

            one.requestNotify(false);
            write(p, q1);
            assertSame(one, ch.getCqEvent());
            one.ackCqEvents(1);
            two.ackCqEvents(1);
        }
    }

    @Test
    void aQueueWithEventsNotAcknowledgedCannotBeDestroyedNorItsChannelWhileItLives() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, fx.node(1), fx.node(2));
            CompChannel ch = p.a.createCompChannel();
            CompletionQueue cq = p.a.createCq(16, ch);
            QueuePair q = p.qpOn(cq);
            for (int i = 0; i < 2; i++) {
                cq.requestNotify(false);
                write(p, q);
                assertSame(cq, ch.getCqEvent());
            }
            q.close();
            RdmaException unacked = assertThrows(RdmaException.class, cq::close);
            assertTrue(unacked.getMessage().contains("2 event(s) taken with getCqEvent and not acknowledged"), unacked.getMessage());
            RdmaException tooMany = assertThrows(RdmaException.class, () -> cq.ackCqEvents(3));
            assertTrue(tooMany.getMessage().contains("cannot acknowledge 3 events: 2 taken"), tooMany.getMessage());
            cq.ackCqEvents(1);
            assertThrows(RdmaException.class, cq::close);
            RdmaException busy = assertThrows(RdmaException.class, ch::close);
            assertTrue(busy.getMessage().contains("still serves 1 completion queue"), busy.getMessage());
            cq.ackCqEvents(1);
            cq.close();
            ch.close();
            assertThrows(RdmaException.class, () -> p.a.createCq(4, ch), "a destroyed channel takes no queues");
        }
    }

    @Test
    void aChannelsQueueTakesNoHandlerAndAnotherContextsChannelIsRefused() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            CompChannel ch = a.createCompChannel();
            CompletionQueue cq = a.createCq(4, ch);
            RdmaException e = assertThrows(RdmaException.class, () -> cq.onEvent(() -> { }));
            assertTrue(e.getMessage().contains("getCqEvent"), e.getMessage());
            assertThrows(RdmaException.class, () -> b.createCq(4, ch));
        }
    }
}
