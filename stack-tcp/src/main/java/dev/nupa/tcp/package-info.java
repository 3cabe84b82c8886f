/** TCP connections and stream sockets. Not built yet (issue 4). */
package dev.nupa.tcp;
