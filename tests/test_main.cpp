#define BOOST_TEST_MODULE nonlocal
#include <boost/test/unit_test.hpp>
