package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

class BackoffIdleStrategyTest {
    /** A device whose only working method is awaitFrames, which records its timeouts. */
    private static FabricDevice recording(List<Long> awaits) {
        return (FabricDevice) Proxy.newProxyInstance(FabricDevice.class.getClassLoader(),
                new Class<?>[] {FabricDevice.class}, (proxy, method, args) -> {
                    if (method.getName().equals("awaitFrames")) {
                        awaits.add((Long) args[0]);
                        return false;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    @Test
    void spinsThenYieldsThenSleepsAndWorkResets() {
        List<Long> awaits = new ArrayList<>();
        BackoffIdleStrategy s = new BackoffIdleStrategy(recording(awaits), 3, 2, 7_000_000L);
        for (int i = 0; i < 5; i++) {
            s.idle(0);
        }
        assertEquals(List.of(), awaits, "three spins and two yields before any sleep");
        s.idle(0);
        assertEquals(List.of(7_000_000L), awaits);
        s.idle(0);
        assertEquals(2, awaits.size(), "stays asleep-idle while there is no work");
        s.idle(1);
        assertEquals(2, awaits.size(), "work never sleeps");
        for (int i = 0; i < 5; i++) {
            s.idle(0);
        }
        assertEquals(2, awaits.size(), "work resets the backoff to spinning");
        s.idle(0);
        assertEquals(3, awaits.size());
    }

    @Test
    void noSpinsNoYieldsSleepsAtOnce() {
        List<Long> awaits = new ArrayList<>();
        BackoffIdleStrategy s = new BackoffIdleStrategy(recording(awaits), 0, 0, 5L);
        s.idle(0);
        assertEquals(List.of(5L), awaits);
    }

    @Test
    void badArgumentsAreRefused() {
        FabricDevice d = recording(new ArrayList<>());
        assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(d, -1, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(d, 0, -1, 1));
        assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(d, 0, 0, 0));
    }
}
