/* Smallest useful exec target for the fork_exec probe: exits 0 at once.
 * run.sh links it with -static so the measured exec excludes ld.so work. */
int main(void) { return 0; }
