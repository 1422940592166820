/* Phase ids shared by the guest's programs (vmlab-bench, vmlab-mark) and the trace's phase
 * table (phases.txt). A phase begins at the marker with its id and ends at the marker with
 * id | PHASE_END. */
#ifndef PHASES_H
#define PHASES_H
#define PHASE_END 0x8000
#define MARK_MAGIC 0x7E500000u
/* Not a phase: the recorder turns this marker into the trace's BootEnd record. */
#define BOOT_END_MARK 0x7FFF

/* The recorder's marker: `or r27,r27,r27` (a no-op) with MARK_MAGIC | id in r3. The branch
 * before it ends QEMU's translation block, so r3 is written back to the vCPU state the
 * recorder reads when the marker runs. */
static inline void mark(unsigned id)
{
    register unsigned r3 __asm__("r3") = MARK_MAGIC | id;
    __asm__ volatile("b 1f\n1:\tor 27,27,27" : : "r"(r3) : "memory");
}
#endif
