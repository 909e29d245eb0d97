// The login form: POST the token to /ui/login (it sets an HttpOnly cookie), then go back to
// the page asked for, when that is one of the UI's own pages.

const form = document.getElementById("login");
const error = document.getElementById("login-error");

/** The page to return to: only a same-origin path under /ui/ (never another site). */
function nextPage() {
  const wanted = new URLSearchParams(location.search).get("next") || "/ui/";
  const safe = wanted.startsWith("/ui/") && !wanted.startsWith("//") && !wanted.includes("\\");
  return safe ? wanted : "/ui/";
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.hidden = true;
  const body = new URLSearchParams({ token: form.elements.token.value });
  let response;
  try {
    response = await fetch("/ui/login", { method: "POST", body, credentials: "same-origin" });
  } catch (failure) {
    error.textContent = `The manager did not answer (${failure.message}).`;
    error.hidden = false;
    return;
  }
  if (response.ok) {
    location.assign(nextPage());
    return;
  }
  let message = `HTTP ${response.status}`;
  try {
    message = (await response.json()).error || message;
  } catch {
    // not JSON: keep the status
  }
  error.textContent = message;
  error.hidden = false;
});
