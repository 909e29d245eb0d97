// The header's "Log out" button: shown only in a login session (a manager with an API
// token); it ends the session on the manager (POST /ui/logout) and goes to the login page.

import { get, post } from "./api.js";

/** Show `button` when this browser is in a session, and log out when it is pressed. */
export async function offerLogout(button) {
  let session;
  try {
    session = await get("/ui/session");
  } catch {
    return; // 404: the manager has no token, there is nothing to log out of
  }
  if (!session || session.expires_at === null) return; // a header's token, not a session
  button.hidden = false;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await post("/ui/logout");
    } finally {
      location.assign("/ui/login");
    }
  });
}
