/*
 * ctors.cpp - C++ firmware (-fno-exceptions -fno-rtti): static objects whose
 * constructors run from .init_array before main (startup.c walks it), one of them a
 * prioritised constructor (.init_array.00200, run first), and virtual calls (through
 * each object's vtable in flash) in the main loop.
 *
 * Prints "ctors=<n> order=<ids> sum=<hex>". Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

static uint32_t order[8];
static uint32_t ctors;

struct Log {
    explicit Log(uint32_t id) { order[ctors++] = id; }
};

struct Mixer {
    uint32_t state;
    explicit Mixer(uint32_t seed) : state(seed * 2654435761u) { order[ctors++] = seed; }
    virtual uint32_t step(uint32_t x)
    {
        state = (state ^ x) * 16777619u;
        return state;
    }
};

struct Twice : Mixer {
    explicit Twice(uint32_t seed) : Mixer(seed) {}
    uint32_t step(uint32_t x) override
    {
        Mixer::step(x);
        return Mixer::step(x + 1u) >> 1;
    }
};

static Log first(1);
static Mixer plain(3);
static Twice twice(5);
static Log last(7);

__attribute__((constructor(200))) static void early()
{
    order[ctors++] = 9;
}

/* volatile: the calls stay virtual (the compiler cannot tell which object each is). */
static Mixer *volatile objects[2] = {&plain, &twice};

int main()
{
    uint32_t sum = 0;
    for (uint32_t i = 0; i < 20000u; i++)
        sum += objects[i & 1u]->step(i);
    printf("ctors=%" PRIu32 " order=", ctors);
    for (uint32_t i = 0; i < ctors; i++)
        printf("%" PRIu32, order[i]);
    printf(" sum=%08" PRIx32 "\n", sum);
    return 0;
}
