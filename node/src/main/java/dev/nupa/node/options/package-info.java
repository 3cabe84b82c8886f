/**
 * The options every node-starting command shares, and how such a command runs its node
 * ({@link dev.nupa.node.options.CommandNode}).
 */
package dev.nupa.node.options;
