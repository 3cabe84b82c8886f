package dev.nupa.l2;

import java.nio.file.Path;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/**
 * The link layer as a verticle: on deploy it joins the fabric file (creating it with
 * {@code geometry} if there is none), attaches as a node, builds the {@link Link} and the
 * {@link NeighborDirectory}, and starts the {@link Datapath} loop; on undeploy it stops the loop and
 * leaves the fabric. The hot path never touches Vert.x: the verticle owns lifecycle only.
 *
 * @param address the fabric address to take, or -1 for the first free one
 */
public final class LinkVerticle extends VerticleBase {
    private final Path fabricPath;
    private final int address;
    private final int mtu;
    private final FabricGeometry geometry;
    private final Datapath.Idle idle;

    private Fabric fabric;
    private FabricDevice device;
    private Link link;
    private NeighborDirectory neighbors;
    private Datapath datapath;

    public LinkVerticle(Path fabricPath, int address, int mtu, FabricGeometry geometry, Datapath.Idle idle) {
        this.fabricPath = fabricPath;
        this.address = address;
        this.mtu = mtu;
        this.geometry = geometry;
        this.idle = idle;
    }

    @Override
    public Future<?> start() {
        return vertx.executeBlocking(() -> {
            open();
            return null;
        });
    }

    private void open() {
        // An existing fabric is joined whatever its geometry; `geometry` only shapes a new one.
        fabric = java.nio.file.Files.exists(fabricPath) ? ShmFabric.join(fabricPath)
                : ShmFabric.openOrCreate(fabricPath, geometry);
        try {
            device = address < 0 ? fabric.attachAny() : fabric.attach(address);
            link = new Link(device, mtu);
            neighbors = new NeighborDirectory(device);
            datapath = new Datapath(link, idle);
            datapath.start();
        } catch (RuntimeException e) {
            closeAll();
            throw e;
        }
    }

    @Override
    public Future<?> stop() {
        return vertx.executeBlocking(() -> {
            closeAll();
            return null;
        });
    }

    private void closeAll() {
        if (datapath != null) {
            datapath.close();
        }
        if (neighbors != null) {
            neighbors.close();
        }
        if (device != null) {
            device.close();
        }
        if (fabric != null) {
            fabric.close();
        }
    }

    public Link link() {
        return requireStarted(link);
    }

    public NeighborDirectory neighbors() {
        return requireStarted(neighbors);
    }

    public Datapath datapath() {
        return requireStarted(datapath);
    }

    public Fabric fabric() {
        return requireStarted(fabric);
    }

    private static <T> T requireStarted(T t) {
        if (t == null) {
            throw new IllegalStateException("the link verticle is not deployed: deploy it and wait for its Future first");
        }
        return t;
    }
}
