#pragma once

#include "comet/host/selfexe.hpp"
