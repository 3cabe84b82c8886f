package dev.nupa.roce.transport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.RdmaFixture;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.RecvWorkRequest;
import org.junit.jupiter.api.Test;

/** The words of a receive mirror, as its owner and a peer's requester move them (docs/rdma.md, "Direct SEND"). */
class RecvMirrorTest {

    @Test
    void theMirrorWordsLetEachReceiveGoToOneMessageAndNoStampOutliveARestart() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext c = fx.node(1);
            RecvMirror m = RecvMirror.export(c.link().device(), 8, 1);
            RecvWorkRequest wr = new RecvWorkRequest().local(c.allocPd().allocMr(4096, Access.LOCAL_WRITE), 0, 64);
            m.post(0, wr);
            m.post(1, wr);
            long n = m.next();
            assertTrue(m.posted(RecvMirror.incarnationOf(n), 0));
            assertTrue(m.claim(n), "a requester claims receive 0");
            assertFalse(m.takeForPacket(0), "a packet cannot take a claimed receive");
            assertFalse(m.claim(n), "nor can a second claim");
            assertTrue(m.takeForPacket(1), "the next one goes to a packet");
            m.stamp(RecvMirror.incarnationOf(n), 0, 5, 0, 0);
            assertTrue(m.placed(0));
            // A requester that read the word before a restart claims nothing after it, and its stamp matches nothing.
            long stale = m.next();
            m.restart();
            m.post(0, wr);
            assertFalse(m.claim(stale));
            m.stamp(RecvMirror.incarnationOf(stale), 0, 5, 0, 0);
            assertFalse(m.placed(0), "a stamp of the old incarnation completes no receive of the new one");
            m.close();
            assertFalse(m.claim(m.next()), "closed: no claim");
        }
    }
}
