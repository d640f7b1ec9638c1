// Awaiting an Asio awaitable from a kopf::Task (the handling core's coroutines): the awaitable
// runs on the operator's loop and resumes the task there.
//
//     auto answer = on_loop(io, api.request("GET", "/version"));
//     json version = co_await answer;   // named first: see "Temporaries in co_await"
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <coroutine>
#include <exception>
#include <optional>

namespace kopf::loop {

template <class T>
struct AsioAwaiter {
    boost::asio::io_context& io;
    boost::asio::awaitable<T> awaitable;
    std::optional<T> result;
    std::exception_ptr error;

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> handle) {
        boost::asio::co_spawn(io, std::move(awaitable),
                              [this, handle](std::exception_ptr e, T value) {
                                  error = e;
                                  if (!e) result.emplace(std::move(value));
                                  handle.resume();
                              });
    }
    T await_resume() {
        if (error) std::rethrow_exception(error);
        return std::move(*result);
    }
};

template <class T>
AsioAwaiter<T> on_loop(boost::asio::io_context& io, boost::asio::awaitable<T> awaitable) {
    return AsioAwaiter<T>{io, std::move(awaitable), std::nullopt, nullptr};
}

}  // namespace kopf::loop
