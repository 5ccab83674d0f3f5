// library_threads.cpp - threads a library starts: std::thread's constructor calls
// libstdc++'s std::thread::_M_start_thread, which calls pthread_create inside libstdc++,
// so the executable names no pthread_create (GCC 12 on glibc 2.34 and later; Debian's gdb
// starts its worker threads so). Four workers run the program's own code at once, each
// loading and storing through a buffer of its own, while the main thread does the same;
// each prints a hash that depends on its work alone, so the output is the same whatever
// the interleaving. Exits 0 when every worker's hash is the one the main thread computes
// for it again.
#include <cstdio>
#include <thread>
#include <vector>

static const int kWorkers = 4;
static const int kWords = 4096;
static const int kRounds = 24;

// Loads and stores through a buffer (every fourth word of a 16 KiB buffer touched in a
// scattered order), returning a hash of what it read.
static unsigned churn(unsigned seed) {
    std::vector<unsigned> buf(kWords);
    unsigned h = seed;
    for (int r = 0; r < kRounds; r++)
        for (int i = 0; i < kWords; i++) {
            buf[i] = buf[(i * 7) & (kWords - 1)] + h;
            h = h * 31 + buf[i];
        }
    return h;
}

int main() {
    unsigned results[kWorkers] = {};
    std::vector<std::thread> workers;
    for (int id = 0; id < kWorkers; id++)
        workers.emplace_back([id, &results] { results[id] = churn(id + 1); });
    unsigned mine = churn(kWorkers + 1);
    for (std::thread &t : workers)
        t.join();
    int bad = 0;
    for (int id = 0; id < kWorkers; id++) {
        std::printf("worker %d: %08x\n", id, results[id]);
        bad += results[id] != churn(id + 1);
    }
    std::printf("main: %08x\n", mine);
    return bad;
}
