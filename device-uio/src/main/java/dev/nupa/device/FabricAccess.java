package dev.nupa.device;

/**
 * Who may touch a fabric file: file permissions guard the fabric (DESIGN, security model). A fabric file is created
 * 0600, or 0660 with {@code group} as its group; a node joins only a file no other user may write, owned by its own
 * user or (with {@code group}) shared with that group, unless it trusts the file ({@code trustFile}).
 *
 * @param group     the group to share a created fabric file with (mode 0660), and whose files to join; null: none
 * @param trustFile join a file that another user owns, or that any user may write, all the same
 */
public record FabricAccess(String group, boolean trustFile) {
    /** The default: files of this user only, created 0600. */
    public static final FabricAccess PRIVATE = new FabricAccess(null, false);

    public FabricAccess {
        if (group != null && group.isBlank()) {
            throw new IllegalArgumentException("the fabric's group is blank; name a group (id -Gn lists yours) or give none");
        }
    }
}
