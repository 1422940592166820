import java.util.HashMap;
import java.util.SplittableRandom;

/**
 * A JVM workload with a large live heap and garbage collection: a HashMap of KEYS Long keys
 * to byte[VALUE] values (the live set: a few hundred MiB at the defaults), then OPS
 * operations at uniformly random keys, nine gets for every put; each put replaces a value
 * with a new array, so the old one becomes garbage and the young generation fills and is
 * collected while the map stays live in the old generation. Recorded by apps/record.sh with
 * java -Xms1g -Xmx1g -XX:+UseParallelGC.
 *
 * usage: java Churn KEYS VALUE OPS
 */
public final class Churn {
    public static void main(String[] args) {
        int keys = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int value = args.length > 1 ? Integer.parseInt(args[1]) : 256;
        long ops = args.length > 2 ? Long.parseLong(args[2]) : 2_000_000L;
        SplittableRandom random = new SplittableRandom(1);
        HashMap<Long, byte[]> map = new HashMap<>();
        for (int i = 0; i < keys; i++) {
            map.put((long) i, new byte[value]);
        }
        long checksum = 0;
        for (long i = 0; i < ops; i++) {
            long key = random.nextInt(keys);
            if (random.nextInt(10) == 0) {
                byte[] v = new byte[value];
                v[(int) (i % value)] = (byte) i;
                map.put(key, v);
            } else {
                byte[] v = map.get(key);
                checksum += v[(int) (key % value)];
            }
        }
        System.out.println("churn: " + keys + " keys of " + value + " bytes, " + ops + " operations, checksum " + checksum);
    }
}
