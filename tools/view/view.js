/* Placeholder (viewdata): viewpage's tools/view/view.js replaces it. It only
 * reads the data and says how many layers model 0 has. */
(function () {
  var data = JSON.parse(document.getElementById("gwr-data").textContent);
  var st = document.getElementById("status");
  st.textContent = data.models[0].layers.length + " layers";
  st.setAttribute("data-rendered", "1");
})();
