package dev.nupa.tests;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A test class that takes the whole machine (a thousand processes, say) and so runs while no other test class does,
 * in this JVM or another test JVM beside it ({@link MachineShare}); other classes run side by side as before.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
@interface RunsAlone {
}
