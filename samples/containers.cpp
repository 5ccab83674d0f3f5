// containers.cpp - the C++ runtime a real program leans on: static constructors (and
// their order), RTTI (typeid, dynamic_cast), std::string/vector/map, exceptions thrown
// across several frames and caught by base type. Prints the address of a global, a heap
// block and a local (as addresses.c does: an instrumented copy must print the same) and
// exits 0 only when every check holds.
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

static int constructed = 0;

struct Registry {
    std::map<std::string, int> names;
    Registry() { constructed++; }
};
static Registry registry;  // built before main by a static constructor

struct Registered {
    explicit Registered(const char *name) { registry.names[name] = ++constructed; }
};
static Registered first("first"), second("second");

struct Animal {
    virtual ~Animal() = default;
    virtual std::string sound() const = 0;
};
struct Dog : Animal {
    std::string sound() const override { return "woof"; }
};
struct Puppy : Dog {
    std::string sound() const override { return "yip"; }
};

struct Failure : std::runtime_error {
    int depth;
    Failure(const std::string &what, int d) : std::runtime_error(what), depth(d) {}
};

__attribute__((noinline)) static int dive(int depth, std::vector<std::string> &trail) {
    std::string step = "level" + std::to_string(depth);
    trail.push_back(step);
    if (depth == 0)
        throw Failure("bottom of " + step, static_cast<int>(trail.size()));
    return dive(depth - 1, trail) + 1;  // never returns normally
}

int global_value = 42;

int main() {
    int local = 7;
    std::vector<int> *heap = new std::vector<int>(16, 3);
    std::printf("global=%p heap=%p local=%p\n", static_cast<void *>(&global_value),
                static_cast<void *>(heap->data()), static_cast<void *>(&local));
    int failures = 0;

    failures += constructed != 3 || registry.names["first"] != 2 || registry.names["second"] != 3;

    std::vector<Animal *> zoo{new Dog, new Puppy, new Dog};
    std::string sounds;
    int puppies = 0;
    for (Animal *a : zoo) {
        sounds += a->sound() + " ";
        puppies += dynamic_cast<Puppy *>(a) != nullptr;
        std::printf("%s says %s\n", typeid(*a) == typeid(Dog) ? "dog" : "puppy", a->sound().c_str());
    }
    failures += sounds != "woof yip woof " || puppies != 1;

    std::map<std::string, int> counts;
    for (const char *w : {"b", "a", "c", "a", "b", "a"})
        counts[w]++;
    std::string order;
    for (const auto &kv : counts)
        order += kv.first + std::to_string(kv.second);
    std::printf("counts %s\n", order.c_str());
    failures += order != "a3b2c1";

    std::vector<std::string> trail;
    try {
        dive(5, trail);
        failures++;
    } catch (const std::exception &e) {
        const Failure *f = dynamic_cast<const Failure *>(&e);
        std::printf("caught '%s' depth %d after %zu frames\n", e.what(), f ? f->depth : -1, trail.size());
        failures += f == nullptr || f->depth != 6 || trail.back() != "level0";
    }

    long sum = 0;
    for (int v : *heap)
        sum += v;
    failures += sum != 48;
    for (Animal *a : zoo)
        delete a;
    delete heap;
    std::printf("failures %d\n", failures);
    return failures;
}
