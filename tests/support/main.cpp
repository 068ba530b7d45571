#define BOOST_TEST_MODULE nonlocal
#ifdef NONLOCAL_TEST_BOOST_HEADER_ONLY
#include <boost/test/included/unit_test.hpp>   // Boost.Test compiled in: cross builds
#else
#include <boost/test/unit_test.hpp>
#endif
