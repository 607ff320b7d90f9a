#pragma once

#include "comet/runtime/selfexe.hpp"
