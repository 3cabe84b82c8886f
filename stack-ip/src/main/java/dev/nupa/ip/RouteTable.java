package dev.nupa.ip;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Routes with longest-prefix match (RFC 1812 5.2.4.3). Small tables are the rule on a fabric, so
 * the routes sit in one array sorted by prefix length, longest first, and the first match wins:
 * allocation-free and safe from any thread (the array is replaced whole when routes change).
 */
public final class RouteTable {
    /** {@link #nextHop} when no route matches. */
    public static final long NO_ROUTE = -1;

    private volatile Route[] routes = new Route[0];

    /** Adds a route, replacing one for the same prefix. */
    public synchronized void add(Route route) {
        List<Route> next = new ArrayList<>(List.of(routes));
        next.removeIf(r -> r.prefix() == route.prefix() && r.prefixLength() == route.prefixLength());
        next.add(route);
        next.sort(Comparator.comparingInt(Route::prefixLength).reversed());
        routes = next.toArray(new Route[0]);
    }

    /** Removes the route for a prefix; returns whether there was one. */
    public synchronized boolean remove(int prefix, int prefixLength) {
        List<Route> next = new ArrayList<>(List.of(routes));
        boolean removed = next.removeIf(r -> r.prefix() == prefix && r.prefixLength() == prefixLength);
        routes = next.toArray(new Route[0]);
        return removed;
    }

    /** The route for {@code destination}, or null. */
    public Route lookup(int destination) {
        for (Route r : routes) {
            if (r.matches(destination)) {
                return r;
            }
        }
        return null;
    }

    /** The next hop's IPv4 address (the destination itself when on-link) as an unsigned value, or {@link #NO_ROUTE}. */
    public long nextHop(int destination) {
        for (Route r : routes) {
            if (r.matches(destination)) {
                return (r.onLink() ? destination : r.gateway()) & 0xFFFF_FFFFL;
            }
        }
        return NO_ROUTE;
    }

    public List<Route> routes() {
        return List.of(routes);
    }
}
