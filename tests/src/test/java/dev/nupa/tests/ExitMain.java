package dev.nupa.tests;

/** A program that exits with the status its argument names: `nupa run` must hand that status on. */
public final class ExitMain {
    private ExitMain() {
    }

    public static void main(String[] args) {
        System.exit(Integer.parseInt(args[0]));
    }
}
