/**
 * {@code nupa soak}: every kind of traffic at once, checked, while nodes are killed and restarted.
 */
package dev.nupa.node.soak;
