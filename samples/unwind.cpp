// Stack unwinding: C++ exceptions thrown through several frames (destructors run on the
// way), caught by type, rethrown, thrown from a virtual call and from a lambda called
// through std::function; plus what a program sees of its own return addresses
// (__builtin_return_address, backtrace). An instrumented copy must print the same.
#include <execinfo.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

static int destroyed = 0;

struct Guard {
    const char *name;
    explicit Guard(const char *n) : name(n) {}
    ~Guard() {
        destroyed++;
        std::printf("  unwind %s\n", name);
    }
};

struct Shape {
    virtual ~Shape() = default;
    virtual int area(int scale) const = 0;
};

struct Square : Shape {
    int side;
    explicit Square(int s) : side(s) {}
    int area(int scale) const override {
        if (side * scale > 40) throw std::out_of_range("square too large: " + std::to_string(side * scale));
        return side * side * scale;
    }
};

__attribute__((noinline)) int leaf(int depth) {
    Guard g("leaf");
    if (depth % 3 == 2) throw std::runtime_error("depth " + std::to_string(depth));
    if (depth % 5 == 4) throw depth;
    return depth * 2;
}

__attribute__((noinline)) int middle(int depth) {
    Guard g("middle");
    std::vector<int> v(depth + 1, depth);
    return leaf(depth) + static_cast<int>(v.size());
}

__attribute__((noinline)) int through_virtual(const Shape &shape, int scale) {
    Guard g("through_virtual");
    return shape.area(scale);
}

__attribute__((noinline)) int through_function(const std::function<int(int)> &f, int x) {
    Guard g("through_function");
    return f(x) + 1;
}

// Where this call returns to, as the program sees it: an instrumented copy that
// pushed relocated return addresses would print another address.
__attribute__((noinline)) void *where_am_i_called_from() {
    return __builtin_return_address(0);
}

__attribute__((noinline)) int frames_here() {
    void *frames[16];
    int n = backtrace(frames, 16);
    std::printf("backtrace: %d frames, first returns to %p\n", n, n > 1 ? frames[1] : nullptr);
    return n;
}

int main() {
    int total = 0;
    for (int i = 0; i < 10; i++) {
        try {
            total += middle(i);
        } catch (const std::runtime_error &e) {
            std::printf("caught runtime_error: %s\n", e.what());
        } catch (int n) {
            std::printf("caught int %d\n", n);
            try {
                throw;
            } catch (int m) {
                std::printf("rethrown %d\n", m);
                total += m;
            }
        }
    }
    std::unique_ptr<Shape> square(new Square(6));
    for (int scale = 1; scale < 10; scale += 3) {
        try {
            total += through_virtual(*square, scale);
        } catch (const std::out_of_range &e) {
            std::printf("caught out_of_range: %s\n", e.what());
        }
    }
    std::function<int(int)> picky = [](int x) -> int {
        if (x & 1) throw std::invalid_argument("odd " + std::to_string(x));
        return x / 2;
    };
    for (int x = 2; x < 6; x++) {
        try {
            total += through_function(picky, x);
        } catch (const std::exception &e) {
            std::printf("caught exception: %s\n", e.what());
        }
    }
    std::printf("called from %p\n", where_am_i_called_from());
    total += frames_here();
    std::printf("total %d, destructors run %d\n", total, destroyed);
    return total % 7;
}
