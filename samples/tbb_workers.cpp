/*
 * tbb_workers.cpp - threads a library's pool starts run the program's code (decision 0113):
 * oneTBB's parallel_for hands the body to its workers, which libtbb starts itself; the
 * executable names no thread start but TBB's entries (OpenVDB's vdb_tool runs so). Each
 * chunk sums its range into its slot.
 */
#include <cstdio>
#include <unistd.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

enum { N = 1 << 18, GRAIN = 1 << 10 };
static unsigned table[1024];
/* A chunk's sum in its own slot: no atomic to retry, and a simple_partitioner splits down to
 * the grain whoever runs the chunks, so the program's own instructions are the same in
 * every run. */
static unsigned long sums[N / GRAIN];

int main()
{
    for (unsigned i = 0; i < 1024; i++)
        table[i] = i * i % 1009;
    tbb::parallel_for(tbb::blocked_range<unsigned>(0, N, GRAIN), [](const tbb::blocked_range<unsigned> &r) {
        if (r.begin() == 0)
            usleep(300000);  /* the first chunk's thread waits: the workers take the others */
        unsigned long sum = 0;
        for (unsigned i = r.begin(); i != r.end(); i++)
            sum += table[i & 1023] + ((i * 2654435761u) >> 20);
        sums[r.begin() / GRAIN] = sum;
    }, tbb::simple_partitioner());
    unsigned long total = 0;
    for (unsigned long sum : sums)
        total += sum;
    std::printf("%lu\n", total);
    return 0;
}
