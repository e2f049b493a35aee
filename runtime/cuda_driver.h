// placeholder: being written
#pragma once
#include <stdexcept>
namespace sparsegen {
class CudaError : public std::runtime_error { public: using std::runtime_error::runtime_error; };
}
